/**
 * A call to an upstream MCP server that cannot be reached is counted (docs/mcp-gateway.md,
 * "Statistics and metrics"): outcome `error` for `mcp:<server>` in
 * ai_backend_upstream_requests_total, as a call the upstream failed is. It was not counted at
 * all, so a server that was down showed no errors on the dashboards, only fewer calls.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestUpstream, rpcCall, startAiServer, tokenFor, type AiServer, type TestUpstream } from './helpers/aiGateway.js';
import { waitForUpstreams } from './helpers/mcpUpstreams.js';

/** One sample's value from a Prometheus text exposition (undefined when the series is absent). */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[3] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[4]);
  }
  return undefined;
}

let upstream: TestUpstream;
let gw: AiServer;
let admin: string;

beforeAll(async () => {
  upstream = await createTestUpstream();
  gw = await startAiServer(upstream, {
    metrics: { port: 0 },
    mcp: { auth: { authType: 'jwt' } },
    // A stdio server that exits at once: every connect fails.
    mcpServers: { down: { command: process.execPath, args: ['-e', 'process.exit(1)'], timeoutMs: 5000 } },
  });
  admin = await tokenFor(`gwdown-admin-${Date.now()}`, { admin: true });
  await waitForUpstreams(gw.runtime, { timeoutMs: 20_000, state: 'failed' });
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
});

const errors = async () => {
  const text = await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${admin}` } })).text();
  return sample(text, 'ai_backend_upstream_requests_total', { provider: 'mcp:down', outcome: 'error' }) ?? 0;
};

it('a call to an upstream that cannot be reached is a tool error and an error of mcp:<server> in the metrics', async () => {
  const before = await errors();
  const r = await rpcCall<{ isError?: boolean }>(gw.url, admin, 'gateway.callTool', { server: 'down', tool: 'echo', arguments: {} });
  expect(JSON.stringify(r.error ?? r.result)).toMatch(/MCP server \\"down\\" is unavailable/);
  expect(await errors()).toBe(before + 1);
});
