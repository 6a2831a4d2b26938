/**
 * The MCP gateway's tool search and isolation, with real upstreams from npm (server-everything and
 * server-filesystem over stdio): servers exposed as 'search' stand behind search_tools and
 * call_tool (and the tokens tools/list costs, with and without, are measured); a call past the
 * server's timeoutMs and an answer past gateway.maxResultBytes are clear tool errors that leave
 * the upstream serving.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/testServer.js';
import { EVERYTHING, FILESYSTEM, waitForUpstreams } from './helpers/mcpUpstreams.js';
import { runtimeOfServices } from '@ai-backend/core/internal';

const dir = mkdtempSync(path.join(tmpdir(), 'gw39-iso-'));
const upstreams = (expose: 'tools' | 'search') => ({
  big: { command: process.execPath, args: [EVERYTHING, 'stdio'], expose },
  files: { command: process.execPath, args: [FILESYSTEM, dir], expose },
});

let searching: TestServer;
let listing: TestServer;
const closers: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  [searching, listing] = await Promise.all([
    startTestServer({
      mcp: { auth: { authType: 'none' } },
      gateway: { maxResultBytes: 4096 },
      mcpServers: {
        ...upstreams('search'),
        slow: {
          command: process.execPath,
          args: [EVERYTHING, 'stdio'],
          // Also bounds the connect (spawn, initialize, lists): 1000 ms was too short with seven
          // upstream processes starting at once beside three other suites on two cores.
          timeoutMs: 2500,
          tools: { allow: ['trigger-long-running-operation', 'get-tiny-image', 'echo'] },
        },
      },
    }),
    startTestServer({ mcp: { auth: { authType: 'none' } }, mcpServers: upstreams('tools') }),
  ]);
  for (const s of [searching, listing]) {
    const rt = runtimeOfServices(await s.server.ready());
    await waitForUpstreams(rt, { timeoutMs: 60_000 });
  }
}, 90_000);

afterAll(async () => {
  await Promise.all(closers.map((c) => c().catch(() => undefined)));
  await Promise.all([searching?.stop(), listing?.stop()]);
});

async function client(server: TestServer): Promise<LegacyClient> {
  const c = new LegacyClient({ name: 'gw-iso', version: '1' });
  await c.connect(new LegacyTransport(new URL(`${server.url}/mcp`)));
  closers.push(() => c.close());
  return c;
}

const textOf = (r: unknown) => (r as { content: Array<{ type: string; text?: string }> }).content[0]?.text ?? '';

describe('tool search (expose: search)', () => {
  it("lists search_tools and call_tool instead of the servers' tools; other servers stay listed", async () => {
    const names = (await (await client(searching)).listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['search_tools', 'call_tool', 'slow__echo']));
    expect(names.filter((n) => n.startsWith('big__') || n.startsWith('files__'))).toEqual([]);
  });

  it("search_tools ranks matching tools with their schemas; call_tool calls one; a listed server's tool is not reachable through call_tool", async () => {
    const c = await client(searching);
    const found = (await c.callTool({ name: 'search_tools', arguments: { query: 'list directory', limit: 3 } })) as unknown as {
      structuredContent: { tools: Array<{ name: string; inputSchema: Record<string, unknown> }> };
    };
    expect(found.structuredContent.tools[0]!.name).toBe('files__list_directory');
    expect(found.structuredContent.tools[0]!.inputSchema).toMatchObject({ type: 'object', properties: { path: expect.any(Object) } });
    const echo = (await c.callTool({ name: 'search_tools', arguments: { query: 'echo' } })) as unknown as {
      structuredContent: { tools: Array<{ name: string }> };
    };
    expect(echo.structuredContent.tools.map((t) => t.name)).toContain('big__echo');
    expect(echo.structuredContent.tools.map((t) => t.name)).not.toContain('slow__echo');
    expect(textOf(await c.callTool({ name: 'call_tool', arguments: { name: 'big__echo', arguments: { message: 'found' } } }))).toBe(
      'Echo: found',
    );
    const listed = (await c.callTool({ name: 'call_tool', arguments: { name: 'slow__echo', arguments: { message: 'x' } } })) as {
      isError?: boolean;
    };
    expect(listed.isError).toBe(true);
    expect(textOf(listed)).toMatch(/unknown tool: slow__echo/);
  });

  it('tools/list costs far fewer tokens with search (measured on server-everything + server-filesystem)', async () => {
    // Tokens approximated as JSON characters / 4, the usual rule for English and JSON.
    const ownTools = (await (await client(listing)).listTools()).tools.filter((t) => !t.name.includes('__'));
    const tokens = (tools: unknown[]) => Math.round(JSON.stringify(tools).length / 4);
    const all = (await (await client(listing)).listTools()).tools.filter((t) => t.name.includes('__'));
    const search = (await (await client(searching)).listTools()).tools.filter((t) => t.name === 'search_tools' || t.name === 'call_tool');
    const withTools = tokens(all);
    const withSearch = tokens(search);
    console.log(
      `tools/list upstream part: ${all.length} tools ≈ ${withTools} tokens listed; search_tools + call_tool ≈ ${withSearch} tokens (our own ${ownTools.length} tools ≈ ${tokens(ownTools)} tokens either way)`,
    );
    expect(all.length).toBeGreaterThan(20);
    expect(withSearch * 5).toBeLessThan(withTools);
  });
});

describe('isolation', () => {
  it('a call past timeoutMs is a clear tool error within about that time; the upstream keeps serving', async () => {
    const c = await client(searching);
    const started = Date.now();
    const r = (await c.callTool({ name: 'slow__trigger-long-running-operation', arguments: { duration: 10, steps: 5 } })) as {
      isError?: boolean;
    };
    expect(Date.now() - started).toBeLessThan(5000);
    expect(r.isError).toBe(true);
    expect(textOf(r)).toMatch(/MCP server "slow" did not answer tools\/call trigger-long-running-operation within 2500 ms/);
    expect(textOf(await c.callTool({ name: 'slow__echo', arguments: { message: 'still here' } }))).toBe('Echo: still here');
  });

  it('an answer larger than gateway.maxResultBytes is a tool error naming the limit', async () => {
    const c = await client(searching);
    const r = (await c.callTool({ name: 'slow__get-tiny-image', arguments: {} })) as { isError?: boolean };
    expect(r.isError).toBe(true);
    expect(textOf(r)).toMatch(/more than gateway.maxResultBytes \(4096\)/);
  });

  it('a cancelled call is given up at once and the upstream serves the next call', async () => {
    const c = await client(searching);
    const ac = new AbortController();
    const pending = c
      .callTool(
        { name: 'call_tool', arguments: { name: 'big__trigger-long-running-operation', arguments: { duration: 5, steps: 5 } } },
        undefined,
        { signal: ac.signal },
      )
      .then(
        () => 'answered',
        (e: Error) => e.name,
      );
    setTimeout(() => ac.abort(), 300);
    const started = Date.now();
    expect(await pending).not.toBe('answered');
    expect(Date.now() - started).toBeLessThan(1500);
    expect(textOf(await c.callTool({ name: 'call_tool', arguments: { name: 'big__echo', arguments: { message: 'after' } } }))).toBe(
      'Echo: after',
    );
  });
});
