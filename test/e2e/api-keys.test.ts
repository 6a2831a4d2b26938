// @every-node: CI runs this file on every Node version it tests (docs/testing.md, "CI: phases and times").
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPostgres, testRedis } from '@ai-backend/test-utils/services';
import { callVia, mcpClient, rpcCall, sleep, tokenFor, type AiServer, type Entry } from './helpers/aiGateway.js';
import { startKeyCluster, type KeyCluster } from './helpers/apiKeyCluster.js';

/**
 * API keys on every entry point of two real servers sharing PostgreSQL and Redis: a key is
 * accepted as `Authorization: Bearer aib_…` on /trpc, /rpc, /mcp and /v1 and as `x-api-key`;
 * a model outside its rules is refused (403); after revocation on one instance it is refused
 * on the other within a second; after expiry it is refused; the official `openai` client and
 * the MCP SDK client work with it; the key never shows up in a log, a metric or an answer.
 */
const pgAt = await testPostgres();
const redisAt = await testRedis();
const ENTRIES: Entry[] = ['trpc', 'rpc', 'mcp'];
const OK_INPUT = { content: 'hello key', systemPrompt: 'Be brief.', provider: 'openai', options: { model: 'gpt-4.1-mini', maxTokens: 20 } };
const OFF_MODEL = { content: 'hello key', systemPrompt: 'Be brief.', provider: 'openai', options: { model: 'gpt-5-mini', maxTokens: 20 } };
/** callVia, where an MCP client refused at connect counts as a refusal. */
const attempt = (gw: AiServer, entry: Entry, key: string, input: unknown) =>
  callVia(gw, entry, key, 'ai.generateText', input).catch((e: unknown) => ({ ok: false as const, message: String(e) }));
const OFF_PROVIDER = { content: 'hello key', systemPrompt: 'Be brief.', provider: 'anthropic', options: { maxTokens: 20 } };

describe.skipIf(!pgAt.ok || !redisAt.ok)('API keys on every entry point, two instances', () => {
  let cluster: KeyCluster;
  let a: AiServer;
  let b: AiServer;
  let user: string;
  const keys: string[] = [];
  const seen: string[] = [];

  async function newKey(rules: Record<string, unknown> = {}): Promise<{ key: string; id: string }> {
    const made = await cluster.newKey({ providers: ['openai'], models: ['gpt-4.1-*'], ...rules });
    keys.push(made.key);
    return made;
  }

  beforeAll(async () => {
    cluster = await startKeyCluster('apikeys', pgAt, redisAt, { outputTokens: 8 });
    ({ a, b, user } = cluster);
  });
  afterAll(() => cluster?.stop());

  it('is accepted on /trpc, /rpc and /mcp, acting as its owner; a model or provider outside its rules is refused with 403', async () => {
    const { key } = await newKey();
    for (const gw of [a, b]) {
      for (const entry of ENTRIES) {
        const ok = await callVia(gw, entry, key, 'ai.generateText', OK_INPUT, seen);
        expect(ok.ok, `${entry} allowed`).toBe(true);
        expect(JSON.stringify(ok)).toContain('Test reply from openai');
        for (const input of [OFF_MODEL, OFF_PROVIDER]) {
          const refused = await callVia(gw, entry, key, 'ai.generateText', input, seen);
          expect(refused.ok, `${entry} refused`).toBe(false);
          expect(refused).toMatchObject(
            entry === 'mcp' ? { message: expect.stringContaining('this API key may not use') } : { code: 'FORBIDDEN' },
          );
        }
      }
      const balance = await callVia(gw, 'rpc', key, 'billing.getTokenBalance', undefined, seen);
      expect(balance).toMatchObject({ ok: true, data: { virtualTokenBalance: expect.any(Number) } });
    }
    const r = await rpcCall(a.url, key, 'ai.generateText', OFF_MODEL);
    expect(r.error?.data).toMatchObject({ appCode: 'FORBIDDEN', details: { reason: 'key_model_not_allowed' } });
    const t = await fetch(`${a.url}/trpc/ai.generateText`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ json: OFF_PROVIDER }),
    });
    expect(t.status).toBe(403);
    seen.push(await t.text());
  });

  it('works from the openai client on /v1 and with x-api-key; 403 outside its rules', async () => {
    const { key } = await newKey();
    const client = new OpenAI({ baseURL: b.url + '/v1', apiKey: key, maxRetries: 0 });
    const done = await client.chat.completions.create({
      model: 'openai/gpt-4.1-mini',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 20,
    });
    expect(done.choices[0]!.message.content).toMatch(/^Test reply from/);
    // /v1/models lists only what the key may use.
    const listed = (await client.models.list()).data.map((m) => m.id).filter((id) => id.includes('/'));
    expect(listed.length).toBeGreaterThan(0);
    expect(listed.every((id) => id.startsWith('openai/gpt-4.1-'))).toBe(true);
    const err = await client.chat.completions
      .create({ model: 'anthropic/claude-sonnet-4-5', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(403);
    // curl -H "x-api-key: aib_…" (the Anthropic wire format's header)
    const viaHeader = await fetch(a.url + '/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20 }),
    });
    expect(viaHeader.status).toBe(200);
    seen.push(await viaHeader.text());
    const rpc = await fetch(a.url + '/rpc', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'billing.getTokenBalance' }),
    });
    expect(rpc.status).toBe(200);
    seen.push(await rpc.text());
  });

  it('works from the MCP SDK client (tools/list, tools/call)', async () => {
    const { key } = await newKey();
    const client = await mcpClient(b.url, key);
    try {
      const tools = await client.listTools();
      expect(tools.tools.map((t) => t.name)).toContain('generateText');
      const r = (await client.callTool({ name: 'generateText', arguments: OK_INPUT })) as {
        isError?: boolean;
        content: Array<{ text: string }>;
      };
      expect(r.isError).toBeFalsy();
      seen.push(r.content[0]!.text);
      const off = (await client.callTool({ name: 'generateText', arguments: OFF_MODEL })) as {
        isError?: boolean;
        content: Array<{ text: string }>;
      };
      expect(off.isError).toBe(true);
    } finally {
      await client.close();
    }
  });

  it('revoked on one instance: refused on the other within a second, on every entry point', async () => {
    const { key, id } = await newKey();
    for (const entry of ENTRIES) expect((await callVia(b, entry, key, 'ai.generateText', OK_INPUT)).ok).toBe(true);
    // An MCP session opened before the revocation: its next request is refused too.
    const open = await mcpClient(b.url, key);
    const revoked = await rpcCall(a.url, user, 'keys.revoke', { id });
    expect(revoked.result).toMatchObject({ apiKey: { status: 'revoked' } });
    // Within the verifier's 1 s cache the other instance may still accept the key (the revocation
    // signal usually ends that at once); a request that starts after it must be refused. Timed by
    // when each request starts, not when its answer comes, which a loaded machine delays.
    const t0 = Date.now();
    for (;;) {
      const startedAt = Date.now() - t0;
      const r = await rpcCall(b.url, key, 'billing.getTokenBalance');
      if (r.error?.data?.appCode === 'INVALID_TOKEN') break;
      expect(startedAt, 'accepted on a request started past the 1 s cache').toBeLessThan(1_000);
      await sleep(20); // the poll's pace, on purpose (it waits for nothing)
    }
    const inSession = await open.callTool({ name: 'generateText', arguments: OK_INPUT }).then(
      (r) => ({ refused: (r as { isError?: boolean }).isError === true, text: JSON.stringify(r) }),
      (e: unknown) => ({ refused: true, text: String(e) }),
    );
    expect(inSession.refused).toBe(true);
    expect(inSession.text).not.toContain(key);
    await open.close().catch(() => undefined);
    for (const gw of [a, b]) {
      for (const entry of ENTRIES) {
        const r = await attempt(gw, entry, key, OK_INPUT);
        expect(r.ok, `${entry} after revoke`).toBe(false);
        expect(JSON.stringify(r)).toContain('API key revoked');
      }
      const v1 = await fetch(gw.url + '/v1/models', { headers: { authorization: `Bearer ${key}` } });
      expect(v1.status).toBe(401);
      const mcp = await fetch(gw.url + '/mcp', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${key}` },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
        }),
      });
      expect(mcp.status).toBe(401);
      expect(await mcp.text()).not.toContain(key);
    }
  });

  it('refused after its expiry on every entry point', async () => {
    const { key } = await newKey({ expiresAt: new Date(Date.now() + 1_500).toISOString() });
    expect((await callVia(a, 'rpc', key, 'ai.generateText', OK_INPUT)).ok).toBe(true);
    await sleep(1_600);
    for (const gw of [a, b]) {
      for (const entry of ENTRIES) {
        const r = await attempt(gw, entry, key, OK_INPUT);
        expect(r.ok, `${entry} after expiry`).toBe(false);
        expect(JSON.stringify(r)).toContain('API key expired');
      }
      const r = await rpcCall(gw.url, key, 'billing.getTokenBalance');
      expect(r.error).toMatchObject({ message: 'API key expired', data: { appCode: 'INVALID_TOKEN' } });
      const v1 = await fetch(gw.url + '/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key },
        body: JSON.stringify({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'x' }] }),
      });
      expect(v1.status).toBe(401);
    }
  });

  it('hostile keys are refused with 401 on every entry point', async () => {
    const { key } = await newKey();
    const bad = [
      key.slice(0, -3),
      key.slice(0, 20) + (key[20] === 'a' ? 'b' : 'a') + key.slice(21),
      `aib_${'A'.repeat(50)}`,
      'aib_%00;DROP TABLE',
      `aib_${'x'.repeat(5000)}`,
    ];
    for (const token of bad) {
      const r = await rpcCall(a.url, token, 'billing.getTokenBalance');
      expect(r.error).toMatchObject({ message: 'invalid API key', data: { appCode: 'INVALID_TOKEN' } });
      const x = await fetch(a.url + '/v1/models', { headers: { 'x-api-key': token } });
      expect(x.status).toBe(401);
      seen.push(r.text, await x.text());
    }
  });

  it('no key appears in any log line, metric or answer after its creation', async () => {
    const res = await fetch(a.url + '/metrics', { headers: { authorization: `Bearer ${await tokenFor('key-admin', { admin: true })}` } });
    expect(res.status).toBe(200);
    const metrics = await res.text();
    expect(metrics).toContain('ai_backend_');
    const all = [...a.logs, ...b.logs, ...seen, metrics].join('\n');
    expect(keys.length).toBeGreaterThan(5);
    for (const k of keys) expect(all).not.toContain(k.slice(16));
  });
});
