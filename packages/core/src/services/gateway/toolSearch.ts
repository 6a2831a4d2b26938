/** A tool as search_tools ranks and answers it. */
export interface SearchableTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

/** What of a query is ranked: its first distinct words, from its first characters. */
const MAX_QUERY_WORDS = 32;
const MAX_QUERY_CHARS = 4096;

const words = (text: string): string[] =>
  text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 1);

/**
 * Rank tools for a query over their names and descriptions: each query word scores 3 when it is
 * a word of the name (split on `_`, `-`, camelCase), 2 when the name contains it, 1 per
 * description word it starts. No index: a gateway fronts hundreds of tools, not millions, and
 * scoring them is a few microseconds each.
 */
export function searchTools<T extends SearchableTool>(tools: readonly T[], query: string, limit: number): T[] {
  // A query is a few words; its distinct ones, at most MAX_QUERY_WORDS: scoring costs words × tools × description
  // words, and a caller may send a query as large as a request body (900 KB held the event loop for 40 s).
  const q = [...new Set(words(query.slice(0, MAX_QUERY_CHARS)))].slice(0, MAX_QUERY_WORDS);
  if (q.length === 0) return tools.slice(0, limit);
  const scored: Array<{ tool: T; score: number }> = [];
  for (const tool of tools) {
    const nameWords = words(tool.name.replace(/([a-z])([A-Z])/g, '$1 $2'));
    const name = tool.name.toLowerCase();
    const desc = words(tool.description ?? '');
    let score = 0;
    for (const w of q) {
      if (nameWords.includes(w)) score += 3;
      else if (name.includes(w)) score += 2;
      score += desc.some((d) => d.startsWith(w)) ? 1 : 0;
    }
    if (score > 0) scored.push({ tool, score });
  }
  scored.sort((a, b) => b.score - a.score || a.tool.name.localeCompare(b.tool.name));
  return scored.slice(0, limit).map((s) => s.tool);
}
