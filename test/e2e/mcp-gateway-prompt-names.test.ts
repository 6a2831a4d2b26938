/**
 * Upstream prompt names that are no valid MCP name once the gateway puts `<server>__` before them
 * (longer than 128 characters, or with a space, a slash or non-ASCII letters), as tool names are
 * (mcp-gateway-tool-names): they were listed as they were. Now each is listed under the same
 * valid, stable name a tool of that name gets (its characters kept where they fit, then 8 hex of
 * its SHA-256), unique, with its own name as its title and in `_meta`, and prompts/get takes that
 * name (or `<server>__<its own name>`). An upstream prompt named as another's shortened name does
 * not take its place: the first of two prompts with one name is kept.
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
    odd: { script: 'oddToolNames.mjs', env: { EXTRA_PROMPT: IMPOSTOR } },
    [LONG_SERVER]: { script: 'oddToolNames.mjs' },
  });
}, 30_000);

afterAll(async () => {
  await Promise.all(closers.map((c) => c().catch(() => undefined)));
  await server?.stop();
});

const connect = (revision: Revision) => mcpRevisionClient(server.url, revision, 'gw-prompt-names', closers);

const textOf = (r: { messages: Array<{ content: unknown }> }) => (r.messages[0]?.content as { text?: string } | undefined)?.text;

describe('MCP gateway: upstream prompt names that are no valid MCP name', () => {
  for (const revision of ['2025-11-25', '2026-07-28'] as const) {
    it(`${revision}: listed under valid, unique names with their own as title, and got by them`, async () => {
      const client = await connect(revision);
      const { prompts } = await client.listPrompts();
      for (const prefix of ['odd__', `${LONG_SERVER}__`]) {
        const mine = prompts.filter((p) => p.name.startsWith(prefix));
        // Six prompts: the impostor does not take 'read file''s name, nor appear twice.
        expect(mine).toHaveLength(6);
        expect(new Set(mine.map((p) => p.name)).size).toBe(6);
        for (const p of mine) expect(p.name).toMatch(MCP_NAME);
        for (const original of ODD_NAMES) {
          const p = mine.find((x) => x.title === original || x.name === `${prefix}${original}`);
          expect(p, original).toBeDefined();
          if (p!.name !== `${prefix}${original}`) expect(p!._meta?.['ai-backend/upstreamName']).toBe(original);
          expect(textOf(await client.getPrompt({ name: p!.name }))).toBe(`prompt ${original}`);
        }
      }
      // The same names as tools of those names get: they depend on the server's and the prompt's names only.
      const tools = (await client.listTools()).tools.map((t) => t.name);
      for (const name of prompts.map((p) => p.name)) expect(tools).toContain(name);
      expect(prompts.map((p) => p.name)).toContain(`odd__admin_wipe_${shortHash('admin/wipe')}`);
      const longest = prompts.find((p) => p.title === LONG_NORTH && p.name.startsWith(LONG_SERVER))!;
      expect(longest.name).toHaveLength(128);
      expect(longest.name.endsWith(`_${shortHash(LONG_NORTH)}`)).toBe(true);
    });
  }

  it("prompts/get takes a prompt's own name after the prefix too; the impostor is not reached by it", async () => {
    const client = await connect('2025-11-25');
    expect(textOf(await client.getPrompt({ name: 'odd__read file' }))).toBe('prompt read file');
    expect(textOf(await client.getPrompt({ name: 'odd__admin/wipe' }))).toBe('prompt admin/wipe');
    // Its own name is 'read file''s listed name, which 'read file' keeps.
    expect(textOf(await client.getPrompt({ name: `odd__${IMPOSTOR}` }))).toBe('prompt read file');
    await expect(client.getPrompt({ name: 'odd__nope/nope' })).rejects.toThrow();
  });
});
