/**
 * The embeddings wire formats the AI SDK providers call: OpenAI's `POST …/embeddings` (also
 * OpenRouter, Mistral and OpenAI-compatible servers) and Google's `:embedContent` /
 * `:batchEmbedContents`. Vectors are deterministic (derived from the text), usage is
 * `ceil(length / 4)` tokens per input, like the generation endpoints.
 */
type Json = Record<string, unknown>;

export type EmbeddingFormat = 'openai' | 'google';

/** The texts of an embeddings request and the dimensions asked for. */
export function parseEmbeddingRequest(
  format: EmbeddingFormat,
  body: Json,
): { texts: string[]; dimensions: number | undefined; model: string } {
  if (format === 'google') {
    const requests = Array.isArray(body.requests) ? (body.requests as Json[]) : [body];
    const texts = requests.map((r) =>
      (((r.content as Json | undefined)?.parts as Json[] | undefined) ?? []).map((p) => String(p.text ?? '')).join(''),
    );
    const dims = (requests[0]?.outputDimensionality as number | undefined) ?? undefined;
    return { texts, dimensions: dims, model: String((requests[0]?.model as string | undefined) ?? '').replace(/^models\//, '') };
  }
  const input = body.input;
  const texts = typeof input === 'string' ? [input] : Array.isArray(input) ? input.map(String) : [];
  return { texts, dimensions: typeof body.dimensions === 'number' ? body.dimensions : undefined, model: String(body.model ?? '') };
}

/** A unit-length vector derived from the text (same text, same vector). */
export function vectorFor(text: string, dims: number): number[] {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  const v = Array.from({ length: dims }, (_, i) => Math.sin(h + i * 7919));
  const norm = Math.hypot(...v) || 1;
  return v.map((x) => Math.round((x / norm) * 1e6) / 1e6);
}

export const embeddingTokens = (texts: string[]) => texts.reduce((n, t) => n + Math.ceil(t.length / 4), 0);

export function embeddingReply(
  format: EmbeddingFormat,
  texts: string[],
  model: string,
  dims: number,
  batch: boolean,
  omitUsage: boolean,
): Json {
  const vectors = texts.map((t) => vectorFor(t, dims));
  if (format === 'google') return batch ? { embeddings: vectors.map((values) => ({ values })) } : { embedding: { values: vectors[0] } };
  const tokens = embeddingTokens(texts);
  return {
    object: 'list',
    data: vectors.map((embedding, index) => ({ object: 'embedding', index, embedding })),
    model,
    ...(omitUsage ? {} : { usage: { prompt_tokens: tokens, total_tokens: tokens } }),
  };
}
