/**
 * Upstream tool names that are no MCP tool name once the gateway puts `<server>__` before them
 * (docs/mcp-gateway.md, "What clients see"): longer than 128 characters, or with a space, a slash
 * or non-ASCII letters. They were listed as they were, and clients that check names (and models,
 * whose APIs allow fewer characters still) could not call them. Now each is listed under a valid,
 * stable name (its characters kept where they fit, then 8 hex of its SHA-256), unique, with its
 * own name as its title and in `_meta`, and is callable by that name on /mcp and /rpc (and by
 * `server` plus its own name on /rpc). An upstream tool named as another's shortened name does
 * not take its calls: the first of two tools with one name is kept.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpRevisionClient, type Revision } from './helpers/mcpRevisionClient.js';
import { IMPOSTOR, LONG_SERVER, MCP_NAME, ODD_NAMES, shortHash } from './helpers/oddNames.js';
import { startScriptUpstreamGateway, type ScriptUpstreamGateway } from './helpers/scriptUpstreamGateway.js';

const LONG_NORTH = ODD_NAMES[0]!;

let server: ScriptUpstreamGateway;
const closers: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  server = await startScriptUpstreamGateway({
    odd: { script: 'oddToolNames.mjs', env: { EXTRA_TOOL: IMPOSTOR } },
    [LONG_SERVER]: { script: 'oddToolNames.mjs' },
  });
}, 30_000);

afterAll(async () => {
  await Promise.all(closers.map((c) => c().catch(() => undefined)));
  await server?.stop();
});

const connect = (revision: Revision) => mcpRevisionClient(server.url, revision, 'gw-names', closers);

const textOf = (r: unknown) => (r as { content: Array<{ text?: string }> }).content[0]?.text;

async function rpc(params: Record<string, unknown>): Promise<{ result?: unknown; error?: { message: string } }> {
  const res = await fetch(`${server.url}/rpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'gateway.callTool', params }),
  });
  return (await res.json()) as { result?: unknown; error?: { message: string } };
}

describe('MCP gateway: upstream tool names that are no MCP tool name', () => {
  for (const revision of ['2025-11-25', '2026-07-28'] as const) {
    it(`${revision}: listed under valid, unique names with their own as title, and callable by them`, async () => {
      const client = await connect(revision);
      const { tools } = await client.listTools();
      for (const prefix of ['odd__', `${LONG_SERVER}__`]) {
        const mine = tools.filter((t) => t.name.startsWith(prefix));
        // Six tools: the impostor does not take 'read file''s name, nor appear twice.
        expect(mine).toHaveLength(6);
        expect(new Set(mine.map((t) => t.name)).size).toBe(6);
        for (const t of mine) expect(t.name).toMatch(MCP_NAME);
        for (const original of ODD_NAMES) {
          const t = mine.find((x) => x.title === original || x.name === `${prefix}${original}`);
          expect(t, original).toBeDefined();
          if (t!.name !== `${prefix}${original}`) expect(t!._meta?.['ai-backend/upstreamName']).toBe(original);
          expect(textOf(await client.callTool({ name: t!.name, arguments: {} }))).toBe(`called ${original}`);
        }
      }
      // Stable: the name depends on the server's and the tool's names only.
      expect(tools.map((t) => t.name)).toContain(`odd__read_file_${shortHash('read file')}`);
      expect(tools.map((t) => t.name)).toContain(`odd__admin_wipe_${shortHash('admin/wipe')}`);
      expect(tools.map((t) => t.name)).toContain('odd__echo');
      const longest = tools.find((t) => t.title === LONG_NORTH && t.name.startsWith(LONG_SERVER))!;
      expect(longest.name).toHaveLength(128);
      expect(longest.name.endsWith(`_${shortHash(LONG_NORTH)}`)).toBe(true);
    });
  }

  it('/rpc calls them by the listed name, or by server and their own name', async () => {
    const listed = `odd__read_file_${shortHash('read file')}`;
    expect((await rpc({ tool: listed })).result).toMatchObject({ content: [{ text: 'called read file' }] });
    expect((await rpc({ server: 'odd', tool: 'read file' })).result).toMatchObject({ content: [{ text: 'called read file' }] });
    expect((await rpc({ server: 'odd', tool: 'admin/wipe' })).result).toMatchObject({ content: [{ text: 'called admin/wipe' }] });
    // The impostor is not reachable by its own name either: its name there is 'read file''s.
    expect((await rpc({ server: 'odd', tool: IMPOSTOR })).result).toMatchObject({ content: [{ text: 'called read file' }] });
    expect((await rpc({ server: 'odd', tool: 'nope/nope' })).error?.message).toMatch(/unknown tool/);
  });
});
