/**
 * The MCP gateway (docs/mcp-gateway.md) with real MCP servers from npm: server-everything over
 * stdio and over Streamable HTTP, server-filesystem over stdio. Their tools appear on /mcp beside
 * ours as <server>__<tool>, for the v2 SDK client (2026-07-28) and the 1.x client (2025-11-25),
 * and through gateway.* on /rpc and /trpc; progress and cancellation reach the upstream.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createTRPCClient, httpLink } from '@trpc/client';
import superjson from 'superjson';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/testServer.js';
import { EVERYTHING, FILESYSTEM, startEverythingHttp, waitForUpstreams } from './helpers/mcpUpstreams.js';
import { runtimeOfServices } from '@ai-backend/core/internal';

const dir = mkdtempSync(path.join(tmpdir(), 'gw39-fs-'));
writeFileSync(path.join(dir, 'hello.txt'), 'hello from the filesystem server');

let server: TestServer;
let http: Awaited<ReturnType<typeof startEverythingHttp>>;
const closers: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  http = await startEverythingHttp();
  server = await startTestServer(
    {
      mcp: { auth: { authType: 'none' } },
      gateway: { allowPrivateNetwork: true },
      mcpServers: {
        every: { command: process.execPath, args: [EVERYTHING, 'stdio'], timeoutMs: 10_000 },
        web: { type: 'http', url: http.url, tools: { deny: ['trigger-*'] } },
        fs: { command: process.execPath, args: [FILESYSTEM, dir], tools: { allow: ['read_text_file', 'list_directory'] } },
      },
    },
    'listening',
  );
  // Shared connections open in the background at start: wait until all three list their tools.
  await waitForUpstreams(runtimeOfServices(await server.server.ready()));
}, 60_000);

afterAll(async () => {
  await Promise.all(closers.map((c) => c().catch(() => undefined)));
  await server?.stop();
  await http?.stop();
});

async function modern(): Promise<ModernClient> {
  const client = new ModernClient({ name: 'gw-2026', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new ModernTransport(new URL(`${server.url}/mcp`)));
  closers.push(() => client.close());
  return client;
}

async function legacy(): Promise<LegacyClient> {
  const client = new LegacyClient({ name: 'gw-2025', version: '1' });
  await client.connect(new LegacyTransport(new URL(`${server.url}/mcp`)));
  closers.push(() => client.close());
  return client;
}

const textOf = (r: unknown) => (r as { content: Array<{ type: string; text?: string }> }).content[0]?.text ?? '';

describe('MCP gateway: upstream tools on /mcp', () => {
  for (const revision of ['2026-07-28', '2025-11-25'] as const) {
    it(`${revision}: tools/list has ours unchanged and the upstreams' under <server>__<tool>, filtered by allow/deny`, async () => {
      const client = revision === '2026-07-28' ? await modern() : await legacy();
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      expect(names).toContain('greeting'); // ours, unprefixed
      expect(names).toContain('every__echo');
      expect(names).toContain('web__echo');
      expect(names).toContain('every__trigger-long-running-operation');
      expect(names.filter((n) => n.startsWith('web__trigger-'))).toEqual([]); // deny
      expect(names.filter((n) => n.startsWith('fs__')).sort()).toEqual(['fs__list_directory', 'fs__read_text_file']); // allow
      const echo = tools.find((t) => t.name === 'every__echo')!;
      expect(echo.inputSchema).toMatchObject({ type: 'object', properties: { message: { type: 'string' } } });
      const structured = tools.find((t) => t.name === 'every__get-structured-content');
      expect(structured?.outputSchema).toBeDefined();
    });

    it(`${revision}: calls reach stdio and HTTP upstreams, with structured output`, async () => {
      const client = revision === '2026-07-28' ? await modern() : await legacy();
      expect(textOf(await client.callTool({ name: 'every__echo', arguments: { message: `hi ${revision}` } }))).toBe(`Echo: hi ${revision}`);
      expect(textOf(await client.callTool({ name: 'web__echo', arguments: { message: 'over http' } }))).toBe('Echo: over http');
      const fileText = textOf(await client.callTool({ name: 'fs__read_text_file', arguments: { path: path.join(dir, 'hello.txt') } }));
      expect(fileText).toContain('hello from the filesystem server');
      const s = (await client.callTool({ name: 'every__get-structured-content', arguments: { location: 'New York' } })) as {
        structuredContent?: Record<string, unknown>;
      };
      expect(s.structuredContent).toMatchObject({ temperature: expect.any(Number) });
    });

    it(`${revision}: a denied or unknown upstream tool is refused like an unknown tool`, async () => {
      const client = revision === '2026-07-28' ? await modern() : await legacy();
      const denied = await client.callTool({ name: 'web__trigger-long-running-operation', arguments: {} }).then(
        () => 'answered',
        (e: Error) => e.message,
      );
      const unknown = await client.callTool({ name: 'nope__echo', arguments: {} }).then(
        () => 'answered',
        (e: Error) => e.message,
      );
      expect(denied).toMatch(/unknown tool: web__trigger-long-running-operation/);
      expect(unknown).toMatch(/unknown tool: nope__echo/);
    });

    it(`${revision}: upstream prompts (<server>__<prompt>) and resources (their own URIs) beside ours`, async () => {
      const client = revision === '2026-07-28' ? await modern() : await legacy();
      const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
      expect(prompts).toEqual(expect.arrayContaining(['every__simple-prompt', 'web__simple-prompt']));
      const got = await client.getPrompt({ name: 'every__simple-prompt', arguments: {} });
      expect(JSON.stringify(got.messages)).toContain('simple prompt');
      const resources = (await client.listResources()).resources;
      const doc = resources.find((r) => r.uri.startsWith('demo://resource/static/document/'));
      expect(doc).toBeDefined();
      const read = await client.readResource({ uri: doc!.uri });
      expect(read.contents[0]!.uri).toBe(doc!.uri);
      expect(JSON.stringify(read.contents[0])).not.toBe('{}');
    });

    it(`${revision}: progress from the upstream reaches the client`, async () => {
      const client = revision === '2026-07-28' ? await modern() : await legacy();
      const seen: number[] = [];
      const onprogress = (p: { progress: number }) => void seen.push(p.progress);
      const params = { name: 'every__trigger-long-running-operation', arguments: { duration: 0.3, steps: 3 } };
      const r =
        client instanceof ModernClient
          ? await client.callTool(params, { onprogress })
          : await client.callTool(params, undefined, { onprogress });
      expect(textOf(r)).toMatch(/completed/i);
      expect(seen.length).toBeGreaterThanOrEqual(2);
    });
  }
});

describe('MCP gateway: /rpc and /trpc', () => {
  it('gateway.listServers, listTools and callTool over JSON-RPC', async () => {
    const call = async (method: string, params?: unknown) => {
      const res = await server.fetch('/rpc', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      });
      return (await res.json()) as { result?: any; error?: any };
    };
    const servers = await call('gateway.listServers');
    expect(servers.result.servers.map((s: { name: string }) => s.name).sort()).toEqual(['every', 'fs', 'web']);
    const tools = await call('gateway.listTools', { server: 'fs' });
    expect(tools.result.tools.map((t: { name: string }) => t.name).sort()).toEqual(['fs__list_directory', 'fs__read_text_file']);
    const r = await call('gateway.callTool', { server: 'web', tool: 'get-sum', arguments: { a: 2, b: 3 } });
    expect(textOf(r.result)).toContain('5');
    const denied = await call('gateway.callTool', {
      server: 'fs',
      tool: 'write_file',
      arguments: { path: path.join(dir, 'x'), content: 'x' },
    });
    expect(denied.error?.message).toMatch(/unknown tool: fs__write_file/);
  });

  it('gateway.callTool over tRPC', async () => {
    const trpc = createTRPCClient<any>({ links: [httpLink({ url: `${server.url}/trpc`, transformer: superjson })] });
    const r = await (trpc as any).gateway.callTool.mutate({ server: 'every', tool: 'echo', arguments: { message: 'trpc' } });
    expect(textOf(r)).toBe('Echo: trpc');
  });
});
