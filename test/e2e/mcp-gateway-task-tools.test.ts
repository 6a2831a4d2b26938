/**
 * An upstream tool that runs only as a task (`execution.taskSupport: "required"`, MCP 2025-11-25
 * tasks), server-everything's `simulate-research-query`, through the MCP gateway
 * (docs/mcp-gateway.md, "What clients see"). The gateway forwarded a plain tools/call, which the
 * upstream refuses ("requires task augmentation"), and listed the tool with its `execution`, so
 * the 1.x SDK client refused to call it at all; through the gateway the tool could not be used.
 * Now the gateway runs it as a task at the upstream and answers its result to a plain call, over
 * stdio and Streamable HTTP, for 2025-11-25 and 2026-07-28 clients, within the server's timeoutMs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpRevisionClient, type Revision } from './helpers/mcpRevisionClient.js';
import { runtimeOfServices } from '@ai-backend/core/internal';
import { startTestServer, type TestServer } from './helpers/testServer.js';
import { EVERYTHING, startEverythingHttp, waitForUpstreams } from './helpers/mcpUpstreams.js';

let server: TestServer;
let http: Awaited<ReturnType<typeof startEverythingHttp>>;
let slow: Awaited<ReturnType<typeof startEverythingHttp>>;
const closers: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  // `short` is an upstream already running (its start awaited here, not bounded): a stdio one is
  // started by the gateway within its timeoutMs, and 1.5 s for a node process's start is a claim
  // about the host, which a loaded one failed; the test's claim is the call's bound only.
  [http, slow] = await Promise.all([startEverythingHttp(), startEverythingHttp()]);
  server = await startTestServer({
    mcp: { auth: { authType: 'none' } },
    gateway: { allowPrivateNetwork: true },
    mcpServers: {
      every: { command: process.execPath, args: [EVERYTHING, 'stdio'], timeoutMs: 20_000 },
      web: { type: 'http', url: http.url, timeoutMs: 20_000 },
      // The research takes about 4 s (four stages of a second): this one gives up first.
      short: { type: 'http', url: slow.url, timeoutMs: 1500 },
    },
  });
  // A first connect of `short` slower than its 1.5 s fails and is retried (after 250 ms, then
  // backing off): the calls below start once every upstream is connected and listed.
  await waitForUpstreams(runtimeOfServices(await server.server.ready()));
}, 60_000);

afterAll(async () => {
  await Promise.all(closers.map((c) => c().catch(() => undefined)));
  await server?.stop();
  await http?.stop();
  await slow?.stop();
});

const connect = (revision: Revision) => mcpRevisionClient(server.url, revision, 'gw-task', closers);

type Result = { content: Array<{ text?: string }>; isError?: boolean; _meta?: Record<string, unknown> };

describe('MCP gateway: an upstream tool that runs only as a task', () => {
  for (const revision of ['2025-11-25', '2026-07-28'] as const) {
    it(`${revision}: listed as a plain tool, and a plain call answers the task's result (stdio and HTTP upstreams)`, async () => {
      const client = await connect(revision);
      const { tools } = await client.listTools();
      const research = tools.find((t) => t.name === 'every__simulate-research-query');
      expect(research).toBeDefined();
      expect(research).not.toHaveProperty('execution');
      const [overStdio, overHttp] = (await Promise.all(
        ['every', 'web'].map((s) =>
          client.callTool({ name: `${s}__simulate-research-query`, arguments: { topic: `gateway ${revision}` } }),
        ),
      )) as Result[];
      for (const r of [overStdio!, overHttp!]) {
        expect(r.isError).toBeFalsy();
        expect(r.content[0]?.text).toContain(`# Research Report: gateway ${revision}`);
        // The upstream's task id is the gateway's business, not the client's.
        expect(r._meta?.['io.modelcontextprotocol/related-task']).toBeUndefined();
      }
    }, 30_000);
  }

  it("a task that outlasts the server's timeoutMs is a tool error naming the server, in about that time", async () => {
    const client = await connect('2026-07-28');
    const started = Date.now();
    const r = (await client.callTool({ name: 'short__simulate-research-query', arguments: { topic: 'slow' } })) as Result;
    // Sooner than the task could have ended (four stages of 1 s, timers that never fire early):
    // the gateway gave up at its bound, it did not wait for the task. The margin over 1.5 s is
    // the host's, so it is as wide as that claim allows.
    expect(Date.now() - started).toBeLessThan(4000);
    expect(r.isError).toBe(true);
    expect(r.content[0]?.text).toMatch(/MCP server "short" did not answer tools\/call simulate-research-query within 1500 ms/);
    // The server serves the next call.
    const echo = (await client.callTool({ name: 'short__echo', arguments: { message: 'still here' } })) as Result;
    expect(echo.content[0]?.text).toBe('Echo: still here');
  }, 15_000);
});
