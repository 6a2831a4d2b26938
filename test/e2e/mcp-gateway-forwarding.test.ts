/**
 * What the MCP gateway forwards between a real upstream and our clients (docs/mcp-gateway.md,
 * "What clients see"), with server-everything from npm over Streamable HTTP (tools/call posted by
 * the gateway itself on the SDK client's session) and over the legacy HTTP+SSE transport:
 * progress and cancellation on an HTTP upstream, sampling and elicitation the upstream asks during
 * a call (answered by a 2025 session's client; a clear tool error for 2026-07-28 clients and on
 * /rpc), and an upstream's own list_changed reaching a 2025 session.
 */
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/testServer.js';
import { startEverythingHttp, waitForUpstreams } from './helpers/mcpUpstreams.js';
import { runtimeOfServices } from '@ai-backend/core/internal';

let server: TestServer;
let web: Awaited<ReturnType<typeof startEverythingHttp>>;
let old: Awaited<ReturnType<typeof startEverythingHttp>>;
const closers: Array<() => Promise<unknown>> = [];
/** What the gateway POSTed to `web` (parsed JSON-RPC messages), seen by a pass-through in front of it. */
const posted: Array<{ method?: string; params?: { name?: string; _meta?: Record<string, unknown> } }> = [];
let recorder: Server;

/** A plain HTTP pass-through to `port` that records each POSTed JSON-RPC message (streams pass as they come). */
async function startRecorder(port: number): Promise<string> {
  recorder = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.method === 'POST' && body.length > 0) {
        const parsed = JSON.parse(body.toString('utf8')) as unknown;
        posted.push(...((Array.isArray(parsed) ? parsed : [parsed]) as typeof posted));
      }
      const out = request(
        { host: '127.0.0.1', port, path: req.url, method: req.method, headers: { ...req.headers, host: `127.0.0.1:${port}` } },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      out.on('error', () => res.destroy());
      res.on('close', () => out.destroy());
      out.end(body);
    });
  });
  await new Promise<void>((resolve) => recorder.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(recorder.address() as AddressInfo).port}/mcp`;
}

beforeAll(async () => {
  [web, old] = await Promise.all([startEverythingHttp(), startEverythingHttp(undefined, 'sse')]);
  server = await startTestServer(
    {
      mcp: { auth: { authType: 'none' } },
      gateway: { allowPrivateNetwork: true },
      mcpServers: {
        web: { type: 'http', url: await startRecorder(web.port), timeoutMs: 15_000 },
        old: { type: 'sse', url: old.url, timeoutMs: 15_000 },
      },
    },
    'listening',
  );
  await waitForUpstreams(runtimeOfServices(await server.server.ready()));
}, 60_000);

afterAll(async () => {
  await Promise.all(closers.map((c) => c().catch(() => undefined)));
  await server?.stop();
  await Promise.all([web?.stop(), old?.stop()]);
  recorder?.closeAllConnections();
  await new Promise((resolve) => recorder?.close(resolve));
});

/** A 2025-11-25 session client (the 1.x SDK) that can answer sampling and elicitation. */
async function legacy(): Promise<LegacyClient> {
  const client = new LegacyClient({ name: 'gw-2025', version: '1' }, { capabilities: { sampling: {}, elicitation: {} } });
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => ({
    model: 'test-model',
    role: 'assistant',
    content: { type: 'text', text: `sampled by the test client (${req.params.maxTokens} tokens)` },
  }));
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada Lovelace', check: true } }));
  await client.connect(new LegacyTransport(new URL(`${server.url}/mcp`)));
  closers.push(() => client.close());
  return client;
}

async function modern(): Promise<ModernClient> {
  const client = new ModernClient(
    { name: 'gw-2026', version: '1' },
    { capabilities: { sampling: {} }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  client.setRequestHandler('sampling/createMessage', async () => ({
    model: 'test-model',
    role: 'assistant',
    content: { type: 'text', text: 'never asked' },
  }));
  await client.connect(new ModernTransport(new URL(`${server.url}/mcp`)));
  closers.push(() => client.close());
  return client;
}

type ToolResult = { content: Array<{ type: string; text?: string }>; isError?: boolean };
const textOf = (r: unknown) => (r as ToolResult).content.map((c) => c.text ?? '').join('\n');

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50)); // the poll's pace, on purpose (it waits for nothing)
  }
}

describe('MCP gateway: a Streamable HTTP upstream (tools/call posted by the gateway)', () => {
  it('progress reaches a 2025 session client, and a cancelled call stops without harming the next', async () => {
    const client = await legacy();
    const seen: number[] = [];
    const r = await client.callTool({ name: 'web__trigger-long-running-operation', arguments: { duration: 0.3, steps: 3 } }, undefined, {
      onprogress: (p) => void seen.push(p.progress),
    });
    expect(textOf(r)).toMatch(/completed/i);
    expect(seen.length).toBeGreaterThanOrEqual(2);

    const controller = new AbortController();
    const started = Date.now();
    const cancelled = client
      .callTool({ name: 'web__trigger-long-running-operation', arguments: { duration: 30, steps: 30 } }, undefined, {
        signal: controller.signal,
        onprogress: () => controller.abort(),
      })
      .then(
        () => 'answered',
        (e: Error) => e.message,
      );
    expect(await cancelled).not.toBe('answered');
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(textOf(await client.callTool({ name: 'web__echo', arguments: { message: 'after the cancel' } }))).toBe('Echo: after the cancel');
  });

  it('progress is asked of the upstream only for a client that asked for it', async () => {
    const client = await legacy();
    const name = 'trigger-long-running-operation';
    const calls = () => posted.filter((m) => m.method === 'tools/call' && m.params?.name === name);
    const before = calls().length;
    expect(textOf(await client.callTool({ name: `web__${name}`, arguments: { duration: 0.2, steps: 2 } }))).toMatch(/completed/i);
    const seen: number[] = [];
    await client.callTool({ name: `web__${name}`, arguments: { duration: 0.2, steps: 2 } }, undefined, {
      onprogress: (p) => void seen.push(p.progress),
    });
    const [plain, tracked] = calls().slice(before);
    expect(plain?.params?._meta?.progressToken).toBeUndefined();
    expect(tracked?.params?._meta?.progressToken).toBeDefined();
    expect(seen.length).toBeGreaterThanOrEqual(1);
  });

  it('sampling and elicitation the upstream asks during a call reach a 2025 session client, and its answers reach the upstream', async () => {
    const client = await legacy();
    const sampled = await client.callTool({ name: 'web__trigger-sampling-request', arguments: { prompt: 'say hi', maxTokens: 7 } });
    expect((sampled as ToolResult).isError).toBeFalsy();
    expect(textOf(sampled)).toContain('sampled by the test client (7 tokens)');
    const elicited = await client.callTool({ name: 'web__trigger-elicitation-request', arguments: {} });
    expect((elicited as ToolResult).isError).toBeFalsy();
    expect(textOf(elicited)).toContain('Name: Ada Lovelace');
  });

  it('a 2026-07-28 client: sampling asked by the upstream is a tool error that says why', async () => {
    const client = await modern();
    const r = (await client.callTool({ name: 'web__trigger-sampling-request', arguments: { prompt: 'say hi' } })) as ToolResult;
    expect(r.isError).toBe(true);
    expect(textOf(r)).toMatch(/sampling\/createMessage/);
    expect(textOf(r)).toMatch(/2026-07-28/);
  });

  it('/rpc: sampling asked by the upstream is a tool error that says why', async () => {
    const res = await fetch(`${server.url}/rpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'gateway.callTool',
        params: { server: 'web', tool: 'trigger-sampling-request', arguments: { prompt: 'say hi' } },
      }),
    });
    const body = (await res.json()) as { result?: ToolResult };
    expect(body.result?.isError).toBe(true);
    expect(textOf(body.result)).toMatch(/cannot forward sampling\/createMessage: the tool was called through \/rpc or \/trpc/);
  });

  it("the upstream's own list_changed reaches a 2025 session, and the new resource is listed", async () => {
    const client = await legacy();
    const heard: string[] = [];
    client.setNotificationHandler(ResourceListChangedNotificationSchema, () => void heard.push('resources'));
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void heard.push('tools'));
    // server-everything registers the gzipped file as a session resource: it announces resources/list_changed.
    const r = (await client.callTool({
      name: 'web__gzip-file-as-resource',
      arguments: { name: 'gw39-note.txt.gz', data: 'data:text/plain;base64,aGVsbG8gZ2F0ZXdheQ==', outputType: 'resourceLink' },
    })) as { content: Array<{ type: string; uri?: string }> };
    const link = r.content.find((c) => c.type === 'resource_link');
    expect(link?.uri).toBeDefined();
    await until('resources/list_changed from the gateway', () => heard.includes('resources'));
    await until('the new resource in resources/list', async () =>
      (await client.listResources()).resources.some((res) => res.uri === link!.uri),
    );
  });
});

describe('MCP gateway: a legacy HTTP+SSE upstream (type "sse")', () => {
  for (const revision of ['2026-07-28', '2025-11-25'] as const) {
    it(`${revision}: its tools are listed and called, with progress`, async () => {
      const client = revision === '2026-07-28' ? await modern() : await legacy();
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['old__echo', 'old__get-sum', 'web__echo']));
      expect(textOf(await client.callTool({ name: 'old__echo', arguments: { message: `over sse ${revision}` } }))).toBe(
        `Echo: over sse ${revision}`,
      );
      const seen: number[] = [];
      const onprogress = (p: { progress: number }) => void seen.push(p.progress);
      const params = { name: 'old__trigger-long-running-operation', arguments: { duration: 0.3, steps: 3 } };
      const r =
        client instanceof ModernClient
          ? await client.callTool(params, { onprogress })
          : await client.callTool(params, undefined, { onprogress });
      expect(textOf(r)).toMatch(/completed/i);
      expect(seen.length).toBeGreaterThanOrEqual(2);
    });
  }
});
