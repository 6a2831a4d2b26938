import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTRPCClient, httpBatchStreamLink } from '@trpc/client';
import superjson from 'superjson';
import OpenAI from 'openai';
import type { AppRouter } from '@ai-backend/core';
import { waitFor, type UpstreamFault } from '@ai-backend/test-utils';
import {
  createTestUpstream,
  creditTokens,
  mcpClient,
  rpcCall,
  startAiServer,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { describeV1Paths } from './helpers/describeMatrix.js';

/**
 * Fallbacks over the real entry points with the real clients: the first target fails (429, 500,
 * or a stream that stalls after its first frame), the second answers. Every entry point names
 * the target that served (tRPC `start` and `finish`, MCP result, /v1 `model`), the upstream saw
 * exactly the two requests, the caller is charged once (one settle, for the serving provider),
 * and GET /metrics counts one fallback for the target left.
 */
let upstream: TestUpstream;
let gw: AiServer;
let admin: string;

describeV1Paths('ai-fallbacks', (path) => {
  beforeAll(async () => {
    upstream = await createTestUpstream({ outputTokens: 16 });
    // A short idle timeout so a stalled stream falls back within the test's time; a breaker that
    // never opens here, so one test's failures do not skip a provider in the next (it has its own test).
    gw = await startAiServer(
      upstream,
      {
        storage: { type: 'memory' },
        ai: { timeoutMs: 800, retry: { backoffMs: 5, maxBackoffMs: 20 }, circuitBreaker: { failureThreshold: 1000 } },
      },
      { path },
    );
    admin = await tokenFor('fb-admin', { admin: true });
  });
  afterAll(async () => {
    await gw.stop();
    await upstream.close();
  });

  let users = 0;
  async function funded(): Promise<{ sub: string; token: string }> {
    const sub = `fb-user-${++users}`;
    await creditTokens(gw.url, admin, sub, 100_000, `fb-${sub}`);
    return { sub, token: await tokenFor(sub) };
  }

  /** `ai_backend_upstream_fallbacks_total` for one provider (summed over models), from GET /metrics. */
  async function fallbacksCounted(provider: string): Promise<number> {
    const res = await fetch(gw.url + '/metrics', { headers: { authorization: `Bearer ${admin}` } });
    expect(res.status).toBe(200);
    let sum = 0;
    for (const line of (await res.text()).split('\n')) {
      if (line.startsWith('ai_backend_upstream_fallbacks_total{') && line.includes(`provider="${provider}"`))
        sum += Number(line.split(' ').at(-1));
    }
    return sum;
  }

  /** One settle for the serving provider, nothing else charged, the ledger consistent. */
  async function chargedOnce(sub: string, provider: string, charged: number) {
    const entries = await gw.runtime.billing.ledger.entries(sub);
    const settles = entries.filter((e) => e.kind === 'settle');
    expect(settles).toHaveLength(1);
    expect(settles[0]!.usage).toMatchObject({ provider });
    const b = await gw.runtime.billing.balances(sub);
    expect(b.subscription + b.one_time).toBe(100_000 - charged);
    expect((await gw.runtime.billing.ledger.audit(sub)).consistent).toBe(true);
  }

  const FAULTS: Array<[string, UpstreamFault, string]> = [
    ['429', { kind: 'status', status: 429 }, 'rate_limited'],
    ['500', { kind: 'status', status: 500 }, 'upstream_5xx'],
    ['stalled', { kind: 'stall' }, 'timeout'],
  ];
  const FIRST = 'anthropic';
  const SECOND = 'google';

  describe('the first target fails, the second serves, one charge, the answer names the server', () => {
    for (const [name, fault, reason] of FAULTS) {
      it(`tRPC streamText (httpBatchStreamLink), ${name}: start and finish name ${SECOND}`, async () => {
        const u = await funded();
        const before = await fallbacksCounted(FIRST);
        upstream.reset();
        upstream.failNext(fault);
        const client = createTRPCClient<AppRouter>({
          links: [
            httpBatchStreamLink({ url: gw.url + '/trpc', transformer: superjson, headers: () => ({ authorization: `Bearer ${u.token}` }) }),
          ],
        });
        const stream = await client.ai.streamText.mutate({
          content: 'fall back please',
          systemPrompt: 's',
          provider: FIRST,
          fallbacks: [SECOND],
        });
        const events: Array<{ type: string; provider?: string; attempts?: unknown[]; result?: any }> = [];
        for await (const e of stream) events.push(e as never);
        expect(events[0]).toMatchObject({ type: 'start', provider: SECOND, attempts: [{ provider: FIRST, reason }] });
        const finish = events.at(-1)!;
        expect(finish.result.data).toMatchObject({ provider: SECOND, attempts: [{ provider: FIRST, reason }] });
        expect(upstream.requests.map((q) => q.provider)).toEqual([FIRST, SECOND]);
        await chargedOnce(u.sub, SECOND, finish.result.tokenUsage.tokensCharged);
        expect(await fallbacksCounted(FIRST)).toBe(before + 1);
      });

      it(`MCP streamText (SDK client), ${name}: progress carries the text, the result names ${SECOND}`, async () => {
        const u = await funded();
        upstream.reset();
        upstream.failNext(fault);
        const client = await mcpClient(gw.url, u.token);
        try {
          const progress: Array<{ message?: string }> = [];
          const r = (await client.callTool(
            { name: 'streamText', arguments: { content: 'fall back please', systemPrompt: 's', provider: FIRST, fallbacks: [SECOND] } },
            undefined,
            {
              onprogress: (p) => progress.push(p),
            },
          )) as { isError?: boolean; content: Array<{ text: string }> };
          expect(r.isError).toBeFalsy();
          const result = JSON.parse(r.content[0]!.text);
          expect(result.data).toMatchObject({ provider: SECOND, attempts: [{ provider: FIRST, reason }] });
          expect(progress.map((p) => p.message).join('')).toBe(result.data.text);
          await chargedOnce(u.sub, SECOND, result.tokenUsage.tokensCharged);
        } finally {
          await client.close();
        }
        expect(upstream.requests.map((q) => q.provider)).toEqual([FIRST, SECOND]);
      });

      it(`openai client, stream: true, ${name}: every chunk's model is ${SECOND}/…, usage once`, async () => {
        const u = await funded();
        upstream.reset();
        upstream.failNext(fault);
        const client = new OpenAI({ baseURL: gw.url + '/v1', apiKey: u.token });
        const stream = await client.chat.completions.create({
          model: `${FIRST}/claude-sonnet-4-5`,
          messages: [{ role: 'user', content: 'fall back please' }],
          stream: true,
          stream_options: { include_usage: true },
          // OpenRouter's fallback field, passed through by the client as an extra body field.
          ...({ models: [`${SECOND}/gemini-2.5-flash`] } as object),
        });
        const models = new Set<string>();
        let text = '';
        let gateway: any;
        for await (const chunk of stream) {
          models.add(chunk.model);
          text += chunk.choices[0]?.delta?.content ?? '';
          gateway ??= (chunk as unknown as { ai_backend?: unknown }).ai_backend;
        }
        expect([...models]).toEqual([`${SECOND}/gemini-2.5-flash`]);
        expect(text).toMatch(/^Test reply from google/);
        expect(gateway).toMatchObject({ provider: SECOND, attempts: [{ provider: FIRST, reason }] });
        await chargedOnce(u.sub, SECOND, gateway.token_usage.tokensCharged);
        expect(upstream.requests.map((q) => q.provider)).toEqual([FIRST, SECOND]);
      });
    }

    it('openai client, non-streaming 500: model names the fallback; without a fallback the alias is echoed', async () => {
      const u = await funded();
      upstream.reset();
      upstream.failNext({ kind: 'status', status: 500 });
      const client = new OpenAI({ baseURL: gw.url + '/v1', apiKey: u.token });
      const r = await client.chat.completions.create({
        model: `${FIRST}/claude-sonnet-4-5`,
        messages: [{ role: 'user', content: 'hi' }],
        ...({ models: [`${SECOND}/gemini-2.5-flash`] } as object),
      });
      expect(r.model).toBe(`${SECOND}/gemini-2.5-flash`);
      const ok = await client.chat.completions.create({
        model: `${FIRST}/claude-sonnet-4-5`,
        messages: [{ role: 'user', content: 'hi' }],
        ...({ models: [`${SECOND}/gemini-2.5-flash`] } as object),
      });
      expect(ok.model).toBe(`${FIRST}/claude-sonnet-4-5`);
    });

    it('JSON-RPC generateText, 429: data names the fallback, one settle, metrics count the target left', async () => {
      const u = await funded();
      const before = await fallbacksCounted('openai');
      upstream.reset();
      upstream.failNext({ kind: 'status', status: 429 });
      const r = await rpcCall(gw.url, u.token, 'ai.generateText', {
        content: 'hi',
        systemPrompt: 's',
        provider: 'openai',
        fallbacks: ['openrouter'],
      });
      expect(r.result.data).toMatchObject({ provider: 'openrouter', attempts: [{ provider: 'openai', reason: 'rate_limited' }] });
      await chargedOnce(u.sub, 'openrouter', r.result.tokenUsage.tokensCharged);
      expect(await fallbacksCounted('openai')).toBe(before + 1);
    });

    it('no fallback taken (the first target answers, or the last one fails): nothing counted', async () => {
      const u = await funded();
      const before = await fallbacksCounted('openrouter');
      await rpcCall(gw.url, u.token, 'ai.generateText', {
        content: 'hi',
        systemPrompt: 's',
        provider: 'openrouter',
        fallbacks: ['openai'],
      });
      upstream.failNext({ kind: 'status', status: 500 });
      const r = await rpcCall(gw.url, u.token, 'ai.generateText', { content: 'hi', systemPrompt: 's', provider: 'openrouter' });
      expect(r.error?.data?.details?.reason).toBe('upstream_5xx');
      expect(await fallbacksCounted('openrouter')).toBe(before);
    });
  });

  describe('every provider falls back to the next over all three clients', () => {
    const NEXT = { anthropic: 'openai', openai: 'google', google: 'openrouter', openrouter: 'anthropic' } as const;
    for (const provider of Object.keys(NEXT) as Array<keyof typeof NEXT>) {
      it(`${provider} → ${NEXT[provider]} (429): tRPC stream, MCP, openai stream each name ${NEXT[provider]} and charge once`, async () => {
        const u = await funded();
        const next = NEXT[provider];
        const input = { content: 'fall back please', systemPrompt: 's', provider, fallbacks: [next] };
        const trpc = createTRPCClient<AppRouter>({
          links: [
            httpBatchStreamLink({ url: gw.url + '/trpc', transformer: superjson, headers: () => ({ authorization: `Bearer ${u.token}` }) }),
          ],
        });
        upstream.reset();
        upstream.failNext({ kind: 'status', status: 429 });
        const events: Array<{ type: string; provider?: string }> = [];
        for await (const e of await trpc.ai.streamText.mutate(input)) events.push(e as never);
        expect(events[0]).toMatchObject({ type: 'start', provider: next });

        upstream.failNext({ kind: 'status', status: 429 });
        const mcp = await mcpClient(gw.url, u.token);
        try {
          const r = (await mcp.callTool({ name: 'streamText', arguments: input })) as { content: Array<{ text: string }> };
          expect(JSON.parse(r.content[0]!.text).data).toMatchObject({ provider: next, attempts: [{ provider, reason: 'rate_limited' }] });
        } finally {
          await mcp.close();
        }

        upstream.failNext({ kind: 'status', status: 429 });
        const openai = new OpenAI({ baseURL: gw.url + '/v1', apiKey: u.token });
        const models = new Set<string>();
        const { data: stream, response } = await openai.chat.completions
          .create({
            model: provider,
            messages: [{ role: 'user', content: 'fall back please' }],
            stream: true,
            ...({ models: [next] } as object),
          })
          .withResponse();
        for await (const chunk of stream) models.add(chunk.model);
        const served = `${next}/${gw.runtime.ai.providers.defaultModel(next)}`;
        // A pass-through answer is the upstream's own (its `model` is the upstream's id); the target that served is in a header.
        if (response.headers.get('x-ai-backend-path') === 'pass-through') {
          expect(response.headers.get('x-ai-backend-model')).toBe(served);
          expect([...models]).toEqual([gw.runtime.ai.providers.defaultModel(next)]);
        } else expect([...models]).toEqual([served]);

        expect(upstream.requests.map((q) => q.provider)).toEqual([provider, next, provider, next, provider, next]);
        const settles = (await gw.runtime.billing.ledger.entries(u.sub)).filter((e) => e.kind === 'settle');
        expect(settles.map((e) => e.usage?.provider)).toEqual([next, next, next]);
        expect((await gw.runtime.billing.ledger.audit(u.sub)).consistent).toBe(true);
      });
    }
  });

  describe("BYOK fallbacks to another provider use the caller's stored key for it", () => {
    const OWN = 'sk-own-openai-request-key-0001';
    const STORED = 'sk-stored-anthropic-key-0002';

    it('with a stored key: the fallback is paid by it, recorded once for the provider that answered, no tokens charged', async () => {
      const u = await funded();
      const stored = await rpcCall(gw.url, u.token, 'auth.storeUserKey', {
        email: `${u.sub}@example.com`,
        provider: 'anthropic',
        apiKey: STORED,
      });
      expect(stored.result).toMatchObject({ success: true });
      // Stored but not allowed to be spent (BYOK off): skipped, as for billing's own choice.
      upstream.reset();
      upstream.failNext({ kind: 'status', status: 429 });
      const off = await rpcCall(gw.url, u.token, 'ai.generateText', {
        content: 'hi',
        systemPrompt: 's',
        provider: 'openai',
        apiKey: OWN,
        fallbacks: ['anthropic'],
      });
      expect(off.error?.data?.details?.attempts).toEqual([
        { provider: 'openai', model: 'gpt-5-mini', reason: 'rate_limited' },
        { provider: 'anthropic', model: 'claude-sonnet-4-5', reason: 'no_stored_key' },
      ]);
      expect((await rpcCall(gw.url, u.token, 'user.updateUserPreferences', { byokEnabled: true })).result).toBeDefined();
      upstream.reset();
      upstream.failNext({ kind: 'status', status: 429 });
      const r = await rpcCall(gw.url, u.token, 'ai.generateText', {
        content: 'hi',
        systemPrompt: 's',
        provider: 'openai',
        apiKey: OWN,
        fallbacks: ['anthropic'],
      });
      expect(r.result.data).toMatchObject({ provider: 'anthropic', attempts: [{ provider: 'openai', reason: 'rate_limited' }] });
      expect(r.result.usageInfo).toBeDefined();
      expect(upstream.requests.map((q) => [q.provider, q.apiKey])).toEqual([
        ['openai', OWN],
        ['anthropic', STORED],
      ]);
      const entries = await gw.runtime.billing.ledger.entries(u.sub);
      const byok = entries.filter((e) => e.kind === 'byok_usage');
      expect(byok).toHaveLength(1);
      expect(byok[0]!.usage).toMatchObject({ provider: 'anthropic', tokensCharged: 0 });
      expect(entries.filter((e) => e.kind === 'settle')).toHaveLength(0);
      const b = await gw.runtime.billing.balances(u.sub);
      expect(b.subscription + b.one_time).toBe(100_000);
    });

    it('streamed over tRPC the same way: start names the fallback', async () => {
      const u = await funded();
      await rpcCall(gw.url, u.token, 'auth.storeUserKey', { email: `${u.sub}@example.com`, provider: 'anthropic', apiKey: STORED });
      await rpcCall(gw.url, u.token, 'user.updateUserPreferences', { byokEnabled: true });
      upstream.reset();
      upstream.failNext({ kind: 'status', status: 503 });
      const client = createTRPCClient<AppRouter>({
        links: [
          httpBatchStreamLink({ url: gw.url + '/trpc', transformer: superjson, headers: () => ({ authorization: `Bearer ${u.token}` }) }),
        ],
      });
      const events: Array<{ type: string; provider?: string; result?: any }> = [];
      for await (const e of await client.ai.streamText.mutate({
        content: 'hi',
        systemPrompt: 's',
        provider: 'openai',
        apiKey: OWN,
        fallbacks: ['anthropic'],
      }))
        events.push(e as never);
      expect(events[0]).toMatchObject({ type: 'start', provider: 'anthropic' });
      expect(events.at(-1)!.result.usageInfo).toBeDefined();
      expect(upstream.requests.map((q) => q.apiKey)).toEqual([OWN, STORED]);
      expect((await gw.runtime.billing.ledger.entries(u.sub)).filter((e) => e.kind === 'byok_usage').map((e) => e.usage?.provider)).toEqual(
        ['anthropic'],
      );
    });

    it('without a stored key: the fallback is skipped (no_stored_key), the first failure is the answer, nothing recorded', async () => {
      const u = await funded();
      upstream.reset();
      upstream.failNext({ kind: 'status', status: 429 });
      const r = await rpcCall(gw.url, u.token, 'ai.generateText', {
        content: 'hi',
        systemPrompt: 's',
        provider: 'openai',
        apiKey: OWN,
        fallbacks: ['anthropic'],
      });
      expect(r.error?.data?.details).toMatchObject({
        reason: 'rate_limited',
        attempts: [
          { provider: 'openai', reason: 'rate_limited' },
          { provider: 'anthropic', reason: 'no_stored_key' },
        ],
      });
      expect(upstream.requests.map((q) => q.provider)).toEqual(['openai']);
      expect((await gw.runtime.billing.ledger.entries(u.sub)).filter((e) => e.kind === 'byok_usage')).toHaveLength(0);
    });

    it('anonymous BYOK calls fall back only within their own provider', async () => {
      upstream.reset();
      upstream.failNext({ kind: 'status', status: 429 });
      const r = await rpcCall(gw.url, null, 'ai.generateText', {
        content: 'hi',
        systemPrompt: 's',
        provider: 'openai',
        apiKey: OWN,
        fallbacks: ['anthropic', 'openai/gpt-4.1'],
      });
      expect(r.result.data).toMatchObject({
        provider: 'openai',
        model: 'gpt-4.1',
        attempts: [{ provider: 'openai', reason: 'rate_limited' }],
      });
      expect(upstream.requests.map((q) => [q.provider, q.apiKey])).toEqual([
        ['openai', OWN],
        ['openai', OWN],
      ]);
    });
  });

  describe('circuit breaker over a real server', () => {
    it('opens after the threshold (the provider is skipped without a request), closes after a successful trial', async () => {
      const s = await startAiServer(
        upstream,
        {
          storage: { type: 'memory' },
          ai: { retry: { backoffMs: 5, maxBackoffMs: 20 }, circuitBreaker: { failureThreshold: 2, cooldownMs: 1500, windowMs: 10_000 } },
        },
        { path },
      );
      try {
        const sub = 'fb-breaker-user';
        await creditTokens(s.url, admin, sub, 100_000, 'fb-breaker');
        const token = await tokenFor(sub);
        let calls = 0;
        const call = () => (
          calls++, rpcCall(s.url, token, 'ai.generateText', { content: 'hi', systemPrompt: 's', provider: 'google', fallbacks: ['openai'] })
        );
        upstream.reset();
        for (let i = 0; i < 2; i++) {
          upstream.failNext({ kind: 'status', status: 500 });
          expect((await call()).result.data).toMatchObject({
            provider: 'openai',
            attempts: [{ provider: 'google', reason: 'upstream_5xx' }],
          });
        }
        upstream.reset();
        const skipped = await call();
        expect(skipped.result.data.attempts).toEqual([{ provider: 'google', model: expect.any(String), reason: 'circuit_open' }]);
        expect(upstream.requests.map((q) => q.provider)).toEqual(['openai']);
        const health = (await rpcCall(s.url, null, 'ai.getRegistryHealth')).result;
        expect(health.providers.google.breaker).toBe('open');
        // After the cooldown one trial call goes to google; its success closes the breaker.
        // While the breaker is open each call skips google, so polling with calls spends no trial.
        const trial = await waitFor(
          async () => {
            const r = (await call()).result;
            return r.data.provider === 'google' && r;
          },
          { timeoutMs: 5000, intervalMs: 50, what: 'the trial call after the cooldown' },
        );
        expect(trial.data.provider).toBe('google');
        expect((await rpcCall(s.url, null, 'ai.getRegistryHealth')).result.providers.google.breaker).toBe('closed');
        // Every call was served (by one target or the other) and charged once.
        const settles = (await s.runtime.billing.ledger.entries(sub)).filter((e) => e.kind === 'settle');
        expect(settles).toHaveLength(calls);
        expect(settles.at(-1)!.usage).toMatchObject({ provider: 'google' });
        expect((await s.runtime.billing.ledger.audit(sub)).consistent).toBe(true);
      } finally {
        await s.stop();
      }
    });
  });
});
