/**
 * An HTTP upstream that stops and comes back (server-everything in its Streamable HTTP mode,
 * killed and started again on the same port: a new process that knows nothing of the gateway's
 * old session) works again through /mcp without restarting the gateway; while it is down, calls
 * are clear tool errors that come quickly, and our own tools keep working.
 */
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { waitFor } from '@ai-backend/test-utils';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/testServer.js';
import { startEverythingHttp, waitForUpstreams } from './helpers/mcpUpstreams.js';
import { runtimeOfServices } from '@ai-backend/core/internal';

let server: TestServer;
let http: Awaited<ReturnType<typeof startEverythingHttp>>;
let client: LegacyClient;

beforeAll(async () => {
  http = await startEverythingHttp();
  server = await startTestServer({
    mcp: { auth: { authType: 'none' } },
    gateway: { allowPrivateNetwork: true },
    mcpServers: { web: { type: 'http', url: http.url, timeoutMs: 5000 } },
  });
  const rt = runtimeOfServices(await server.server.ready());
  await waitForUpstreams(rt);
  client = new LegacyClient({ name: 'gw-http-recovery', version: '1' });
  await client.connect(new LegacyTransport(new URL(`${server.url}/mcp`)));
}, 60_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await server?.stop();
  await http?.stop();
});

const textOf = (r: unknown) => (r as { content: Array<{ type: string; text?: string }> }).content[0]?.text ?? '';
const echo = (message: string) => client.callTool({ name: 'web__echo', arguments: { message } });

it('an HTTP upstream that stops and comes back on its address works again without a restart', async () => {
  expect(textOf(await echo('before'))).toBe('Echo: before');
  await http.stop();

  const started = Date.now();
  const during = await echo('down');
  expect(Date.now() - started).toBeLessThan(5000);
  expect(during.isError).toBe(true);
  expect(textOf(during)).toMatch(/MCP server "web"/);
  // Our own tools do not depend on it.
  const own = (await client.listTools()).tools.map((t) => t.name);
  expect(own.some((n) => !n.startsWith('web__'))).toBe(true);

  http = await startEverythingHttp(http.port);
  // Back within the reconnect backoff: the gateway opens a new session with the new process.
  let last: unknown;
  await waitFor(
    async () => {
      last = await echo('back');
      return textOf(last) === 'Echo: back';
    },
    // Not faster than this: each try is a request that counts toward /mcp's rate limit.
    { timeoutMs: 20_000, intervalMs: 300, what: 'web__echo answering again' },
  );
  expect(textOf(last)).toBe('Echo: back');
  expect(textOf(await echo('again'))).toBe('Echo: again');
}, 60_000);
