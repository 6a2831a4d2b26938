/**
 * Upstream lists that come in pages (docs/mcp-gateway.md, "Failure behaviour"): every page of an
 * upstream's tools is listed, and the whole list is bounded by gateway.maxResultBytes as one
 * answer is (with the 64 KiB a stdio answer's envelope may add). The SDK client's own walk gathered up to 64 pages of up to that size each,
 * so an
 * upstream paging a huge tool list made the gateway hold it and hand it to every client.
 */
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runtimeOfServices } from '@ai-backend/core/internal';
import { waitForUpstreams } from './helpers/mcpUpstreams.js';
import { startTestServer, type TestServer } from './helpers/testServer.js';

const PAGED = fileURLToPath(new URL('./helpers/pagedToolList.mjs', import.meta.url));
let server: TestServer;
let client: Client;

beforeAll(async () => {
  server = await startTestServer({
    mcp: { auth: { authType: 'none' } },
    gateway: { maxResultBytes: 200_000 },
    mcpServers: {
      // 5 pages of 3 small tools.
      paged: { command: process.execPath, args: [PAGED, '5', '3', '10'], timeoutMs: 10_000 },
      // 10 pages of about 55 KB: each page within the limit, the list twice over it (with the 64 KiB of an answer's envelope).
      huge: { command: process.execPath, args: [PAGED, '10', '50', '1000'], timeoutMs: 10_000 },
    },
  });
  const rt = runtimeOfServices(await server.server.ready());
  await waitForUpstreams(rt, { state: 'settled', timeoutMs: 20_000 });
  client = new Client({ name: 'gw-paged', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
}, 30_000);

afterAll(async () => {
  await client?.close();
  await server?.stop();
});

describe('MCP gateway: paged upstream lists', () => {
  it('every page of an upstream tool list is listed and callable', async () => {
    const names = (await client.listTools()).tools.map((t) => t.name).filter((n) => n.startsWith('paged__'));
    expect(names).toHaveLength(15);
    expect(names).toContain('paged__p4_t2');
    const r = (await client.callTool({ name: 'paged__p4_t2', arguments: {} })) as { content: Array<{ text?: string }> };
    expect(r.content[0]?.text).toBe('called p4_t2');
  });

  it('an upstream whose pages add up past gateway.maxResultBytes is refused, naming the limit; the others serve', async () => {
    const rt = runtimeOfServices(await server.server.ready());
    const huge = rt.gateway.status().find((s) => s.name === 'huge')!;
    // Failed, or already trying again after its backoff (the error stays shown).
    expect(huge.state).not.toBe('ready');
    expect(huge.error).toMatch(/lists more than 265536 bytes in its tools\/list pages \(gateway\.maxResultBytes and 64 KiB\)/);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names.filter((n) => n.startsWith('huge__'))).toEqual([]);
    expect(names.filter((n) => n.startsWith('paged__'))).toHaveLength(15);
  });
});
