/**
 * A legacy HTTP+SSE upstream (server-everything in its `sse` mode) that dies in the middle of a
 * call (docs/mcp-gateway.md, "Failure behaviour"): the call is a tool error at once, not after the
 * server's timeoutMs (every answer of such a server comes on its one event stream, so none can
 * come once that stream broke; the call had waited the full 20 s), and when the server is back on
 * its address the gateway opens a new session with it without a restart.
 */
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { waitFor } from '@ai-backend/test-utils';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runtimeOfServices } from '@ai-backend/core/internal';
import { startTestServer, type TestServer } from './helpers/testServer.js';
import { startEverythingHttp, waitForUpstreams } from './helpers/mcpUpstreams.js';

let server: TestServer;
let sse: Awaited<ReturnType<typeof startEverythingHttp>>;
let client: LegacyClient;

beforeAll(async () => {
  sse = await startEverythingHttp(undefined, 'sse');
  server = await startTestServer({
    mcp: { auth: { authType: 'none' } },
    gateway: { allowPrivateNetwork: true },
    mcpServers: { old: { type: 'sse', url: sse.url, timeoutMs: 20_000 } },
  });
  const rt = runtimeOfServices(await server.server.ready());
  await waitForUpstreams(rt);
  client = new LegacyClient({ name: 'gw-sse-recovery', version: '1' });
  await client.connect(new LegacyTransport(new URL(`${server.url}/mcp`)));
}, 60_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await server?.stop();
  await sse?.stop();
});

const textOf = (r: unknown) => (r as { content: Array<{ text?: string }> }).content[0]?.text ?? '';

it('a call in flight when a legacy SSE upstream dies fails at once, and the upstream serves again when it is back', async () => {
  const started = Date.now();
  setTimeout(() => void sse.stop(), 500);
  const during = await client.callTool({ name: 'old__trigger-long-running-operation', arguments: { duration: 10, steps: 10 } });
  expect(Date.now() - started).toBeLessThan(5000);
  expect(during.isError).toBe(true);
  expect(textOf(during)).toMatch(/MCP server "old"/);

  sse = await startEverythingHttp(sse.port, 'sse');
  let last: unknown;
  await waitFor(
    async () => {
      last = await client.callTool({ name: 'old__echo', arguments: { message: 'back' } });
      return textOf(last) === 'Echo: back';
    },
    { timeoutMs: 20_000, intervalMs: 300, what: 'old__echo answering again' },
  );
  expect(textOf(last)).toBe('Echo: back');
}, 60_000);
