/**
 * An upstream's tool definitions are untrusted (docs/mcp-gateway.md, "Failure behaviour"): one
 * tool with an output schema that cannot be compiled (a dangling `$ref`) made the 1.x SDK
 * client's tools/list fail as a whole (it compiles every output schema while reading the list),
 * so a 2025 client saw none of the gateway's tools, ours included; a tool listed twice reached
 * clients twice. Now such tools are left out (and logged), the first of two with one name is
 * kept, and everything else is listed and callable for both revisions.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpRevisionClient, type Revision } from './helpers/mcpRevisionClient.js';
import { startScriptUpstreamGateway, type ScriptUpstreamGateway } from './helpers/scriptUpstreamGateway.js';

let server: ScriptUpstreamGateway;
const closers: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  server = await startScriptUpstreamGateway({ odd: { script: 'hostileToolList.mjs' } });
}, 30_000);

afterAll(async () => {
  await Promise.all(closers.map((c) => c().catch(() => undefined)));
  await server?.stop();
});

const connect = (revision: Revision) => mcpRevisionClient(server.url, revision, 'gw-hostile', closers);

const textOf = (r: unknown) => (r as { content: Array<{ text?: string }> }).content[0]?.text;

describe('MCP gateway: a hostile upstream tool list', () => {
  for (const revision of ['2025-11-25', '2026-07-28'] as const) {
    it(`${revision}: tools/list answers, without the unusable tools and with one tool per name`, async () => {
      const client = await connect(revision);
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      expect(names).toContain('greeting'); // ours
      expect(names.filter((n) => n.startsWith('odd__'))).toEqual(['odd__echo', 'odd__linked-list']);
      expect(tools.find((t) => t.name === 'odd__echo')?.description).toBe('the first echo');
      expect(textOf(await client.callTool({ name: 'odd__echo', arguments: { message: 'x' } }))).toBe('called echo');
      expect(textOf(await client.callTool({ name: 'odd__linked-list', arguments: {} }))).toBe('called linked-list');
      await expect(client.callTool({ name: 'odd__dangling-output', arguments: {} })).rejects.toThrow(/unknown tool: odd__dangling-output/);
    });
  }

  it('the status page counts the usable tools only', async () => {
    const odd = server.runtime.gateway.status().find((s) => s.name === 'odd')!;
    expect(odd.toolList.map((t) => t.name)).toEqual(['odd__echo', 'odd__linked-list']);
  });
});
