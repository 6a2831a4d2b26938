import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  createTestUpstream,
  creditTokens,
  rpcCall,
  startAiServer,
  tokenFor,
  trpcClient,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';

/** One sample's value from a Prometheus text exposition (undefined when the series is absent). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
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
let user: string;
let payer: string;
beforeAll(async () => {
  upstream = await createTestUpstream();
  gw = await startAiServer(upstream, {
    storage: { type: 'memory' },
    metrics: { port: 0 },
    admin: { users: ['metrics-admin'] },
    mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: true, windowMs: 60_000, maxRequests: 1000, maxToolCalls: 1000 } },
  });
  admin = await tokenFor('metrics-admin', { admin: true });
  user = await tokenFor('metrics-user');
  payer = await tokenFor('metrics-payer');
  await creditTokens(gw.url, admin, 'metrics-payer', 100_000, 'metrics-1');
});
afterAll(async () => {
  await gw.stop();
  await upstream.close();
});

const scrape = async (token = admin) => {
  const res = await fetch(gw.url + '/metrics', { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
};

describe('GET /metrics on the main listener', () => {
  it('is refused without a token (401) and to a non-administrator (403)', async () => {
    const anon = await fetch(gw.url + '/metrics');
    expect(anon.status).toBe(401);
    expect(anon.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect((await fetch(gw.url + '/metrics', { headers: { authorization: `Bearer ${user}` } })).status).toBe(403);
    expect((await fetch(gw.url + '/metrics', { headers: { authorization: 'Bearer nonsense' } })).status).toBe(401);
  });

  it("an administrator API key reads it only when its tools rule, if it has one, admits 'metrics'", async () => {
    const key = async (tools?: string[]) => {
      const r = await rpcCall<{ key: string }>(gw.url, admin, 'keys.create', {
        name: 'scraper',
        scopes: ['mcp:admin'],
        ...(tools ? { tools } : {}),
      });
      if (!r.result) throw new Error(JSON.stringify(r.error));
      return r.result.key;
    };
    await scrape(await key());
    await scrape(await key(['metrics']));
    await scrape(await key(['billing.*', 'metr*']));
    for (const tools of [['billing.*'], ['admin.*']]) {
      const res = await fetch(gw.url + '/metrics', { headers: { authorization: `Bearer ${await key(tools)}` } });
      expect(res.status, tools.join()).toBe(403);
      expect(await res.text()).not.toContain('ai_backend_');
    }
  });

  it("an administrator API key limited by allowedIps reads it from its addresses only, and /health/ready's details likewise", async () => {
    const key = async (allowedIps: string[]) => {
      const r = await rpcCall<{ key: string }>(gw.url, admin, 'keys.create', { name: 'scraper', scopes: ['mcp:admin'], allowedIps });
      if (!r.result) throw new Error(JSON.stringify(r.error));
      return r.result.key;
    };
    // The client address was not passed with the key: a key limited to addresses was refused from every one.
    const here = await key(['127.0.0.1/32', '::1/128']);
    await scrape(here);
    // An administrator sees each check's timing (`ms`); the public sees only `ok`.
    const timed = async (token: string) => {
      const res = await fetch(gw.url + '/health/ready', { headers: { authorization: `Bearer ${token}` } });
      const checks = Object.values(((await res.json()) as { checks: Record<string, { ms?: number }> }).checks);
      expect(checks.length).toBeGreaterThan(0);
      return checks.every((c) => typeof c.ms === 'number');
    };
    expect(await timed(admin)).toBe(true);
    expect(await timed(user)).toBe(false);
    expect(await timed(here)).toBe(true);
    const elsewhere = await key(['203.0.113.0/24']);
    const refused = await fetch(gw.url + '/metrics', { headers: { authorization: `Bearer ${elsewhere}` } });
    expect(refused.status).not.toBe(200);
    expect(await refused.text()).not.toContain('ai_backend_');
    expect(await timed(elsewhere)).toBe(false);
  });

  it("/health/ready's details go to an administrator key only when its tools rule, if it has one, admits system.health", async () => {
    const key = async (tools?: string[]) => {
      const r = await rpcCall<{ key: string }>(gw.url, admin, 'keys.create', {
        name: 'prober',
        scopes: ['mcp:admin'],
        ...(tools ? { tools } : {}),
      });
      if (!r.result) throw new Error(JSON.stringify(r.error));
      return r.result.key;
    };
    const timed = async (token: string) => {
      const res = await fetch(gw.url + '/health/ready', { headers: { authorization: `Bearer ${token}` } });
      const checks = Object.values(((await res.json()) as { checks: Record<string, { ms?: number }> }).checks);
      expect(checks.length).toBeGreaterThan(0);
      return checks.every((c) => typeof c.ms === 'number');
    };
    for (const tools of [undefined, ['system.health'], ['system.*'], ['health']])
      expect(await timed(await key(tools)), String(tools)).toBe(true);
    // A key narrowed to billing (or to metrics) reaches no more than what its rule names.
    for (const tools of [['billing.*'], ['metrics'], ['admin.*']]) expect(await timed(await key(tools)), tools.join()).toBe(false);
  });

  it('counts procedure calls by entry point, procedure and outcome, with latency histograms', async () => {
    const before = await scrape();
    const okBefore = sample(before, 'ai_backend_requests_total', { entry: 'rpc', procedure: 'mcp.echo', outcome: 'ok' }) ?? 0;
    await rpcCall(gw.url, user, 'mcp.echo', { message: 'a' });
    await rpcCall(gw.url, user, 'mcp.echo', { message: 'b' });
    await rpcCall(gw.url, null, 'admin.status', {});
    await trpcClient(gw.url, user).mcp.echo.query({ message: 'c' });
    const text = await scrape();
    expect(sample(text, 'ai_backend_requests_total', { entry: 'rpc', procedure: 'mcp.echo', outcome: 'ok' })).toBe(okBefore + 2);
    expect(sample(text, 'ai_backend_requests_total', { entry: 'trpc', procedure: 'mcp.echo', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(
      sample(text, 'ai_backend_requests_total', { entry: 'rpc', procedure: 'admin.status', outcome: 'UNAUTHORIZED' }),
    ).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'ai_backend_request_duration_seconds_count', { entry: 'rpc', procedure: 'mcp.echo' })).toBe(okBefore + 2);
    expect(sample(text, 'ai_backend_request_duration_seconds_bucket', { entry: 'rpc', procedure: 'mcp.echo', le: '+Inf' })).toBe(
      okBefore + 2,
    );
    expect(sample(text, 'ai_backend_http_requests_total', { entry: 'rpc', status: '2xx' })).toBeGreaterThanOrEqual(3);
    expect(sample(text, 'ai_backend_process_resident_memory_bytes')).toBeGreaterThan(0);
  });

  it('counts the OpenAI-compatible /v1 API under entry "openai", for HTTP requests and procedure calls', async () => {
    const before = await scrape();
    const httpBefore = sample(before, 'ai_backend_http_requests_total', { entry: 'openai', status: '2xx' }) ?? 0;
    const res = await fetch(gw.url + '/v1/models', { headers: { authorization: `Bearer ${user}` } });
    expect(res.status).toBe(200);
    const bad = await fetch(gw.url + '/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${user}` },
      body: '{}',
    });
    expect(bad.status).toBe(400);
    const text = await scrape();
    expect(sample(text, 'ai_backend_http_requests_total', { entry: 'openai', status: '2xx' })).toBe(httpBefore + 1);
    expect(sample(text, 'ai_backend_http_requests_total', { entry: 'openai', status: '4xx' })).toBeGreaterThanOrEqual(1);
    expect(
      sample(text, 'ai_backend_requests_total', { entry: 'openai', procedure: 'ai.listAllowedModels', outcome: 'ok' }),
    ).toBeGreaterThanOrEqual(1);
  });

  it('keeps cardinality bounded: no user ids, unknown paths never become labels', async () => {
    await rpcCall(gw.url, user, 'no.such.procedure-' + Math.random(), {});
    await fetch(gw.url + '/trpc/nope.' + Math.random());
    await fetch(gw.url + '/totally/unknown/' + Math.random());
    const text = await scrape();
    expect(text).not.toContain('metrics-user');
    expect(text).not.toContain('metrics-payer');
    expect(text).not.toContain('no.such.procedure');
    expect(text).not.toMatch(/procedure="nope\./);
    expect(sample(text, 'ai_backend_http_requests_total', { entry: 'other', status: '4xx' })).toBeGreaterThanOrEqual(1);
  });

  it('counts upstream calls, tokens and money by provider and model', async () => {
    const r = await rpcCall(gw.url, payer, 'ai.generateText', { content: 'hello there', systemPrompt: 'be brief', provider: 'openai' });
    expect(r.result?.success).toBe(true);
    const model = r.result.data.model as string;
    const text = await scrape();
    expect(sample(text, 'ai_backend_upstream_requests_total', { provider: 'openai', model, outcome: '2xx' })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'ai_backend_upstream_duration_seconds_count', { provider: 'openai', model })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'ai_backend_tokens_total', { provider: 'openai', model, payer: 'platform' })).toBe(r.result.tokenUsage.tokensUsed);
    expect(sample(text, 'ai_backend_cost_usd_total', { provider: 'openai', model, payer: 'platform' })).toBeGreaterThan(0);
    expect(
      sample(text, 'ai_backend_storage_operation_duration_seconds_count', { backend: 'memory', operation: 'increment' }),
    ).toBeGreaterThan(0);
  });

  it('counts upstream failures by outcome', async () => {
    upstream.failNext({ kind: 'status', status: 503 }, 5);
    const r = await rpcCall(gw.url, payer, 'ai.generateText', { content: 'x', systemPrompt: 's', provider: 'anthropic' });
    expect(r.error).toBeDefined();
    const text = await scrape();
    expect(sample(text, 'ai_backend_upstream_requests_total', { provider: 'anthropic', outcome: '5xx' })).toBeGreaterThanOrEqual(1);
  });

  it('counts MCP sessions', async () => {
    const client = new Client({ name: 'metrics', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(gw.url + '/mcp'), { requestInit: { headers: { authorization: `Bearer ${admin}` } } }),
    );
    try {
      await client.listTools();
      const text = await scrape();
      expect(sample(text, 'ai_backend_mcp_sessions')).toBe(1);
      // The client's GET event stream is open; the POST answers streamed as SSE have ended.
      await expect.poll(async () => sample(await scrape(), 'ai_backend_mcp_streams'), { timeout: 5000 }).toBe(1);
    } finally {
      await client.close();
    }
    // Its stream ended with the client: the gauge is back to zero (the Node response's close).
    await expect.poll(async () => sample(await scrape(), 'ai_backend_mcp_streams'), { timeout: 5000 }).toBe(0);
  });

  it('counts rate-limit refusals', async () => {
    const limitedServer = await startAiServer(upstream, {
      storage: { type: 'memory' },
      mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: true, windowMs: 60_000, maxRequests: 1000, maxToolCalls: 2 } },
    });
    try {
      for (let i = 0; i < 4; i++) await rpcCall(limitedServer.url, user, 'mcp.echo', { message: String(i) });
      const text = await (await fetch(limitedServer.url + '/metrics', { headers: { authorization: `Bearer ${admin}` } })).text();
      expect(sample(text, 'ai_backend_rate_limited_total', { kind: 'toolCalls' })).toBe(2);
      expect(sample(text, 'ai_backend_requests_total', { entry: 'rpc', procedure: 'mcp.echo', outcome: 'TOO_MANY_REQUESTS' })).toBe(2);
    } finally {
      await limitedServer.stop();
    }
  });
});

describe('metrics.port: the separate loopback listener', () => {
  it('serves /metrics without authentication on its own port, and nothing else', async () => {
    const addr = gw.server.metricsAddress();
    expect(addr?.host).toBe('127.0.0.1');
    expect(addr!.port).not.toBe(new URL(gw.url).port);
    const res = await fetch(addr!.url + '/metrics');
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('ai_backend_requests_total');
    expect((await fetch(addr!.url + '/rpc', { method: 'POST' })).status).toBe(404);
  });
});
