/**
 * `gateway.maxResultBytes` bounds what the gateway reads of an upstream's answer, not only what
 * it passes on (docs/mcp-gateway.md, "Failure behaviour"): an upstream that answers resources/read,
 * prompts/get or (over legacy SSE and 2026-07-28) tools/call with an endless or huge body is cut
 * off once the limit is passed, and the caller gets the size error at once, instead of the gateway
 * buffering the whole body (memory) until the call's timeout.
 *
 * The upstream here is a minimal Streamable HTTP server (2025 revision, JSON answers) written out
 * by hand, so that it can stream a body that never ends; it counts the bytes it managed to send.
 */
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runtimeOfServices } from '@ai-backend/core/internal';
import { waitForUpstreams } from './helpers/mcpUpstreams.js';
import { startTestServer, type TestServer } from './helpers/testServer.js';

const MAX = 64 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 'x');
/** The upstream stops by itself after this much (the test must not fill the machine's memory when the gateway does not stop it). */
const GIVE_UP = 256 * 1024 * 1024;

let upstream: Server;
let server: TestServer;
let client: LegacyClient;
const sent = { bytes: 0 };

/** Write `head`, then `x` forever (a JSON string that never closes), until the reader goes away or GIVE_UP. */
function endless(res: ServerResponse, type: string, head: string): void {
  res.writeHead(200, { 'content-type': type });
  res.write(head);
  sent.bytes = head.length;
  const pump = () => {
    while (sent.bytes < GIVE_UP && !res.destroyed) {
      sent.bytes += CHUNK.length;
      if (!res.write(CHUNK)) return void res.once('drain', pump);
    }
    res.end();
  };
  pump();
}

function startUpstream(): Promise<string> {
  upstream = createServer((req, res) => {
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const msg = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        id?: number | string;
        method: string;
        params?: { name?: string };
      };
      const answer = (result: unknown) => {
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's1' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
      };
      switch (msg.method) {
        case 'initialize':
          return answer({
            protocolVersion: '2025-06-18',
            capabilities: { tools: {}, prompts: {}, resources: {} },
            serverInfo: { name: 'endless', version: '1' },
          });
        case 'tools/list':
          return answer({ tools: [{ name: 'ok', inputSchema: { type: 'object' } }] });
        case 'prompts/list':
          return answer({ prompts: [{ name: 'big' }] });
        case 'resources/list':
          return answer({ resources: [{ uri: 'endless://big', name: 'big' }] });
        case 'tools/call':
          return answer({ content: [{ type: 'text', text: 'ok' }] });
        case 'resources/read':
          return endless(
            res,
            'application/json',
            `{"jsonrpc":"2.0","id":${JSON.stringify(msg.id)},"result":{"contents":[{"uri":"endless://big","text":"`,
          );
        case 'prompts/get':
          // The same, as an SSE answer: one event whose data never ends.
          return endless(
            res,
            'text/event-stream',
            `data: {"jsonrpc":"2.0","id":${JSON.stringify(msg.id)},"result":{"messages":[{"role":"user","content":{"type":"text","text":"`,
          );
        default:
          // Notifications are accepted; any other request (the 2026-07-28 probe among them) is not known here.
          if (msg.id === undefined) return void res.writeHead(202).end();
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } }));
      }
    });
  });
  return new Promise((resolve) =>
    upstream.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`)),
  );
}

beforeAll(async () => {
  const url = await startUpstream();
  server = await startTestServer({
    mcp: { auth: { authType: 'none' } },
    gateway: { allowPrivateNetwork: true, maxResultBytes: MAX },
    mcpServers: { endless: { type: 'http', url, timeoutMs: 20_000 } },
  });
  await waitForUpstreams(runtimeOfServices(await server.server.ready()));
  client = new LegacyClient({ name: 'ide', version: '1' });
  await client.connect(new LegacyTransport(new URL(`${server.url}/mcp`)));
}, 60_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await server?.stop();
  upstream?.closeAllConnections();
  await new Promise((resolve) => upstream?.close(resolve));
});

describe('MCP gateway: an upstream answer past gateway.maxResultBytes is cut off while it is read', () => {
  it('resources/read (a JSON answer that never ends)', async () => {
    const started = Date.now();
    await expect(client.readResource({ uri: 'endless://big' })).rejects.toThrow(/maxResultBytes/);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(sent.bytes).toBeLessThan(64 * MAX);
  });

  it('prompts/get (an SSE event that never ends)', async () => {
    const started = Date.now();
    await expect(client.getPrompt({ name: 'endless__big' })).rejects.toThrow(/maxResultBytes/);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(sent.bytes).toBeLessThan(64 * MAX);
  });

  it('the connection still serves after both', async () => {
    const r = (await client.callTool({ name: 'endless__ok', arguments: {} })) as { content: Array<{ text?: string }> };
    expect(r.content[0]?.text).toBe('ok');
  });
});
