// @every-node: CI runs this file on every Node version it tests (docs/testing.md, "CI: phases and times").
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TRPCClientError } from '@trpc/client';
import {
  createTestUpstream,
  creditTokens,
  mcpClient,
  PROVIDERS,
  rpcCall,
  SERVER_KEY,
  sleep,
  startAiServer,
  waitFor,
  SYSTEM_PROMPT,
  tokenFor,
  trpcClient,
  type AiServer,
  type Provider,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { describeMatrix } from './helpers/describeMatrix.js';

/**
 * Issue 5 end to end: ai.generateText through all four providers over the three real entry
 * points (/trpc with the tRPC client, /rpc with fetch, /mcp with the MCP SDK client), with JWT
 * identities, paid by platform tokens or by the caller's own key (in the input or stored).
 */
let upstream: TestUpstream;
let gw: AiServer;
let admin: string;
const seen: string[] = [];

describeMatrix('AI procedures on every entry point', (mode) => {
  beforeAll(async () => {
    upstream = await createTestUpstream({ outputTokens: 16 });
    gw = await startAiServer(upstream, { storage: { type: 'memory' } }, { mode });
    admin = await tokenFor('ops-admin', { admin: true });
  });
  afterAll(async () => {
    await gw.stop();
    await upstream.close();
  });

  type Entry = 'trpc' | 'rpc' | 'mcp';
  const ENTRIES: Entry[] = ['trpc', 'rpc', 'mcp'];
  const PATH: Record<Provider, string> = {
    anthropic: '/v1/messages',
    openai: '/v1/responses',
    google: '/v1beta/models/gemini-2.5-flash:generateContent',
    openrouter: '/api/v1/chat/completions',
  };
  const MODEL: Record<Provider, string> = {
    anthropic: 'claude-sonnet-4-5',
    openai: 'gpt-5-mini',
    google: 'gemini-2.5-flash',
    openrouter: 'openai/gpt-5-mini',
  };
  const registry = JSON.parse(readFileSync(new URL('../../packages/core/src/services/ai/models.json', import.meta.url), 'utf8')) as {
    providers: Record<Provider, { models: Record<string, { inputUsdPerMTok: number; outputUsdPerMTok: number }> }>;
  };
  const fee = (n: number) => Math.ceil(n * 0.1);

  /** ai.generateText over one entry point; resolves with the parsed answer or rejects with { code, message }. */
  async function generate(entry: Entry, token: string, input: Record<string, unknown>): Promise<any> {
    if (entry === 'trpc') {
      try {
        const r = await trpcClient(gw.url, token, seen).ai.generateText.mutate(input as never);
        return r;
      } catch (e) {
        if (e instanceof TRPCClientError) throw { code: (e.data as { code: string }).code, message: e.message };
        throw e;
      }
    }
    if (entry === 'rpc') {
      const r = await rpcCall(gw.url, token, 'ai.generateText', input, { seen });
      if (r.error) throw { code: r.error.data?.code, message: r.error.message };
      return r.result;
    }
    const client = await mcpClient(gw.url, token);
    try {
      const r = (await client.callTool({ name: 'generateText', arguments: input })) as {
        isError?: boolean;
        content: Array<{ type: string; text: string }>;
      };
      const text = r.content[0]!.text;
      seen.push(text);
      if (r.isError) throw { code: text.split(':')[0], message: text };
      return JSON.parse(text);
    } finally {
      await client.close();
    }
  }

  async function balanceOf(token: string): Promise<number> {
    return (await rpcCall<{ virtualTokenBalance: number }>(gw.url, token, 'billing.getTokenBalance')).result!.virtualTokenBalance;
  }

  describe('platform-paid generateText, every provider on every entry point', () => {
    const sub = 'plat-user';
    let user: string;
    beforeAll(async () => {
      user = await tokenFor(sub);
      expect(await creditTokens(gw.url, admin, sub, 100_000, 'plat-credit-1')).toBe(100_000);
    });

    for (const entry of ENTRIES) {
      for (const provider of PROVIDERS) {
        it(`${provider} over /${entry}: server key upstream, tokenUsage exact, balance charged`, async () => {
          const before = await balanceOf(user);
          const content = `Say hello over ${entry} to ${provider}.`;
          const r = await generate(entry, user, {
            content,
            systemPrompt: '@support',
            provider,
            metadata: { name: `${entry}-${provider}`, type: 'e2e' },
            options: { maxTokens: 64 },
          });

          const rec = upstream.requests.at(-1)!;
          expect(rec.path).toBe(PATH[provider]);
          expect(rec.apiKey).toBe(SERVER_KEY);
          expect(rec.system).toBe(SYSTEM_PROMPT);
          expect(rec.content).toBe(content);
          expect(rec.maxTokens).toBe(64);

          const inputTokens = Math.ceil((SYSTEM_PROMPT.length + content.length) / 4);
          const used = inputTokens + 16;
          // The spec's output, key for key: success, data, tokenUsage; no usageInfo on platform calls.
          expect(Object.keys(r).sort()).toEqual(['data', 'success', 'tokenUsage']);
          expect(r.success).toBe(true);
          expect(r.data).toEqual({
            text: expect.stringMatching(/^Test reply from /),
            provider,
            model: MODEL[provider],
            finishReason: 'stop',
            usage: { inputTokens, outputTokens: 16, totalTokens: used },
            requestId: expect.any(String),
          });
          expect(r.tokenUsage).toEqual({
            tokensUsed: used,
            tokensCharged: used + fee(used),
            platformFee: fee(used),
            remainingBalance: before - used - fee(used),
          });
          expect(Object.keys(r.tokenUsage).sort()).toEqual(['platformFee', 'remainingBalance', 'tokensCharged', 'tokensUsed']);
          expect(await balanceOf(user)).toBe(before - used - fee(used));
        });
      }
    }

    it('the ledger holds one settled call per request with its metadata, and sums to the balance', async () => {
      const usage = (await rpcCall(gw.url, user, 'billing.getUsageHistory', { limit: 100 })).result.usage as Array<Record<string, any>>;
      expect(usage).toHaveLength(12);
      expect(usage.every((u) => u.mode === 'platform' && u.tokensCharged === u.tokensUsed + u.platformFee)).toBe(true);
      expect(new Set(usage.map((u) => u.metadata.name)).size).toBe(12);
      expect(usage.map((u) => u.provider).sort()).toEqual([...PROVIDERS, ...PROVIDERS, ...PROVIDERS].sort());
      const charged = usage.reduce((s, u) => s + u.tokensCharged, 0);
      expect(await balanceOf(user)).toBe(100_000 - charged);
      const audit = await gw.runtime.billing.ledger.audit(sub);
      expect(audit).toEqual({
        balances: { subscription: 100_000 - charged, one_time: 0 },
        sums: { subscription: 100_000 - charged, one_time: 0 },
        consistent: true,
      });
    });
  });

  describe('BYOK generateText', () => {
    const cost = (provider: Provider, i: number, o: number) => {
      const m = registry.providers[provider].models[MODEL[provider]]!;
      return (i * m.inputUsdPerMTok + o * m.outputUsdPerMTok) / 1e6;
    };

    for (const entry of ENTRIES) {
      for (const provider of PROVIDERS) {
        it(`apiKey in the input, ${provider} over /${entry}: the caller's key upstream, usageInfo, nothing charged`, async () => {
          const sub = `byok-in-${entry}-${provider}`;
          const token = await tokenFor(sub);
          const key = `sk-own-${entry}-${provider}-0123456789`;
          const content = 'Use my own key please.';
          const r = await generate(entry, token, { content, systemPrompt: 'Be short.', provider, apiKey: key });
          expect(upstream.requests.at(-1)!.apiKey).toBe(key);
          const i = Math.ceil(('Be short.'.length + content.length) / 4);
          expect(Object.keys(r).sort()).toEqual(['data', 'success', 'usageInfo']);
          expect(r.usageInfo).toEqual({ tokensUsed: i + 16, estimatedCostUsd: expect.any(Number) });
          expect(r.usageInfo.estimatedCostUsd).toBeCloseTo(cost(provider, i, 16), 12);
          expect(r.usageInfo.estimatedCostUsd).toBeGreaterThan(0);
          expect(await balanceOf(token)).toBe(0);
          const [u] = (await rpcCall(gw.url, token, 'billing.getUsageHistory')).result.usage;
          expect(u).toMatchObject({ mode: 'byok', provider, tokensUsed: i + 16, tokensCharged: 0, platformFee: 0 });
          expect(JSON.stringify(seen.slice(-3))).not.toContain(key);
        });
      }
    }

    for (const entry of ENTRIES) {
      it(`stored key (auth.storeUserKey + BYOK enabled), no tokens, over /${entry}: the stored key pays`, async () => {
        const sub = `byok-stored-${entry}`;
        const email = `${sub}@example.com`;
        const token = await tokenFor(sub, { email });
        const key = `sk-stored-${entry}-ABCDEFGHIJ-7777`;
        const trpc = trpcClient(gw.url, token, seen);
        expect(await trpc.auth.storeUserKey.mutate({ email, provider: 'anthropic', apiKey: key })).toMatchObject({
          success: true,
          exists: true,
          last4: '7777',
        });

        // Stored but not enabled: no tokens and no permission to spend the key → payment required.
        await expect(generate(entry, token, { content: 'hi', systemPrompt: 's', provider: 'anthropic' })).rejects.toMatchObject({
          code: 'PAYMENT_REQUIRED',
        });
        const calls = upstream.requests.length;

        await trpc.user.updateUserPreferences.mutate({ byokEnabled: true });
        const r = await generate(entry, token, { content: 'hi there', systemPrompt: 's', provider: 'anthropic' });
        expect(upstream.requests).toHaveLength(calls + 1);
        expect(upstream.requests.at(-1)!.apiKey).toBe(key);
        expect(r.usageInfo.tokensUsed).toBe(Math.ceil('shi there'.length / 4) + 16);
        expect(r.tokenUsage).toBeUndefined();
        expect(await balanceOf(token)).toBe(0);
      });
    }

    it('with tokens, the default order spends tokens first; consumptionOrder byok-first uses the stored key', async () => {
      const sub = 'byok-order';
      const token = await tokenFor(sub);
      await creditTokens(gw.url, admin, sub, 5000, 'order-1');
      const trpc = trpcClient(gw.url, token, seen);
      await trpc.user.configureBYOK.mutate({ providers: { openai: { enabled: true, apiKey: 'sk-order-key-000000001' } } });
      const first = await generate('rpc', token, { content: 'x', systemPrompt: 's', provider: 'openai', options: { maxTokens: 10 } });
      expect(first.tokenUsage).toBeDefined();
      expect(upstream.requests.at(-1)!.apiKey).toBe(SERVER_KEY);
      await trpc.user.updateUserPreferences.mutate({ consumptionOrder: ['byok', 'subscription', 'one_time'] });
      const second = await generate('trpc', token, { content: 'x', systemPrompt: 's', provider: 'openai', options: { maxTokens: 10 } });
      expect(second.usageInfo).toBeDefined();
      expect(upstream.requests.at(-1)!.apiKey).toBe('sk-order-key-000000001');
      expect(await balanceOf(token)).toBe(5000 - first.tokenUsage.tokensCharged);
    });
  });

  describe('errors on the wire', () => {
    const sub = 'wire-user';
    let user: string;
    beforeAll(async () => {
      user = await tokenFor(sub);
      await creditTokens(gw.url, admin, sub, 50_000, 'wire-1');
    });

    it('an upstream 429 is HTTP 429 with Retry-After on /trpc, and the hold is refunded', async () => {
      const res = await fetch(gw.url + '/trpc/ai.generateText', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${user}` },
        body: JSON.stringify({ json: { content: 'busy? [[upstream:429:retry=7]]', systemPrompt: 's', provider: 'openai' } }),
      });
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toBe('7');
      const body = (await res.json()) as { error: { json: { data: { code: string } } } };
      expect(body.error.json.data.code).toBe('TOO_MANY_REQUESTS');
      expect(await balanceOf(user)).toBe(50_000);
    });

    it('an upstream 429 carries Retry-After on /rpc, with details.retryAfterSeconds', async () => {
      const r = await rpcCall(gw.url, user, 'ai.generateText', {
        content: 'busy? [[upstream:429:retry=9]]',
        systemPrompt: 's',
        provider: 'google',
      });
      expect(r.headers.get('retry-after')).toBe('9');
      expect(r.error).toMatchObject({
        code: -32029,
        data: { code: 'TOO_MANY_REQUESTS', appCode: 'RATE_LIMITED', details: { reason: 'rate_limited', retryAfterSeconds: 9 } },
      });
      expect(await balanceOf(user)).toBe(50_000);
    });

    it('an upstream 429 over MCP is a tool error the model can read', async () => {
      await expect(
        generate('mcp', user, { content: '[[upstream:429:retry=3]]', systemPrompt: 's', provider: 'anthropic' }),
      ).rejects.toMatchObject({ code: 'TOO_MANY_REQUESTS' });
      expect(await balanceOf(user)).toBe(50_000);
    });

    it('no tokens and no key: PAYMENT_REQUIRED on every entry point, before any upstream request', async () => {
      const broke = await tokenFor('broke-user');
      const calls = upstream.requests.length;
      for (const entry of ENTRIES) {
        await expect(generate(entry, broke, { content: 'x', systemPrompt: 's' })).rejects.toMatchObject({ code: 'PAYMENT_REQUIRED' });
      }
      const r = await fetch(gw.url + '/trpc/ai.generateText', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${broke}` },
        body: JSON.stringify({ json: { content: 'x', systemPrompt: 's' } }),
      });
      expect(r.status).toBe(402);
      expect(upstream.requests).toHaveLength(calls);
    });

    it('anonymous callers may bring a key; server-paid anonymous use is refused by default', async () => {
      const own = await rpcCall(gw.url, null, 'ai.generateText', {
        content: 'x',
        systemPrompt: 's',
        provider: 'openrouter',
        apiKey: 'sk-anon-key-123456',
      });
      expect(own.result.usageInfo.tokensUsed).toBeGreaterThan(0);
      const paid = await rpcCall(gw.url, null, 'ai.generateText', { content: 'x', systemPrompt: 's' });
      expect(paid.error?.data?.code).toBe('PAYMENT_REQUIRED');
    });
  });

  describe('a client that disconnects mid-call is not charged', () => {
    const sub = 'leaving-user';
    let user: string;
    beforeAll(async () => {
      user = await tokenFor(sub);
      await creditTokens(gw.url, admin, sub, 20_000, 'leave-1');
    });

    async function abandon(send: (signal: AbortSignal) => Promise<unknown>) {
      const ac = new AbortController();
      const before = upstream.requests.length;
      const pending = send(ac.signal).catch((e: unknown) => e);
      await upstream.waitForRequests(before + 1);
      // The hold is taken while the upstream works.
      expect(await balanceOf(user)).toBeLessThan(20_000);
      ac.abort();
      expect(await pending).toMatchObject({ name: 'AbortError' });
      const rec = upstream.requests[before]!;
      // The server aborts its upstream request as soon as the client has gone.
      await waitFor(() => rec.aborted, { what: 'the upstream request aborted' });
      await waitFor(async () => (await balanceOf(user)) === 20_000, { what: 'the hold released' });
    }

    it('/rpc: fetch aborted while the upstream is slow', async () => {
      await abandon((signal) =>
        rpcCall(
          gw.url,
          user,
          'ai.generateText',
          { content: 'slow [[upstream:latency=1500]]', systemPrompt: 's', provider: 'openai' },
          { signal },
        ),
      );
    });

    it('/trpc: fetch aborted while the upstream is slow', async () => {
      await abandon((signal) =>
        fetch(gw.url + '/trpc/ai.generateText', {
          method: 'POST',
          signal,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${user}` },
          body: JSON.stringify({ json: { content: 'slow [[upstream:latency=1500]]', systemPrompt: 's', provider: 'anthropic' } }),
        }),
      );
    });

    it('the ledger shows holds and releases, no charge, and stays consistent', async () => {
      // A deliberate pause past the upstream's 1500 ms latency: an answer arriving that late must
      // not be settled after the release (asserting that nothing happens in the window).
      await sleep(1600);
      const entries = await gw.runtime.billing.ledger.entries(sub);
      expect(entries.map((e) => e.kind)).toEqual(['credit', 'reserve', 'release', 'reserve', 'release']);
      expect(entries.filter((e) => e.kind === 'release').every((e) => e.note?.reason === 'cancelled')).toBe(true);
      expect((await rpcCall(gw.url, user, 'billing.getUsageHistory')).result.usage).toEqual([]);
      expect((await gw.runtime.billing.ledger.audit(sub)).consistent).toBe(true);
      expect(await balanceOf(user)).toBe(20_000);
    });
  });

  describe('nothing secret in what clients received or the server logged', () => {
    it('no system prompt, server key or user key in any response or log line', () => {
      const responses = seen.join('\n');
      const logs = gw.logs.join('\n');
      expect(responses.length).toBeGreaterThan(1000);
      for (const secret of [SYSTEM_PROMPT, 'CONFIDENTIAL', SERVER_KEY, 'sk-own-', 'sk-stored-', 'sk-order-key', 'sk-anon-key']) {
        expect(responses, `responses contain ${secret}`).not.toContain(secret);
        expect(logs, `logs contain ${secret}`).not.toContain(secret);
      }
    });
  });
});
