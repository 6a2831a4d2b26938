import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { createTestUpstream, rpcCall, tokenFor, type AiServer, type TestUpstream } from './helpers/aiGateway.js';
import { balanceOf as balanceIn, fundedUser, startSixProviderServer } from './helpers/sixProviders.js';

/**
 * A server with six providers (the four built-ins and two named: openai-compatible and the AI
 * SDK's Mistral package) where one named provider fails: calls fall back to another, the breaker
 * opens (the failing provider is then skipped without a request), only the serving target is
 * charged, and GET /metrics counts the targets left. Also: every listing names all six.
 */
let upstream: TestUpstream;
let gw: AiServer;
let admin: string;

beforeAll(async () => {
  upstream = await createTestUpstream({ outputTokens: 16 });
  gw = await startSixProviderServer(
    upstream,
    {
      aliases: { cheap: 'local/org/llama-3-8b' },
      fallbacks: ['cheap', 'google'],
      circuitBreaker: { failureThreshold: 2, cooldownMs: 60_000, windowMs: 60_000 },
      retry: { backoffMs: 0, maxBackoffMs: 0 },
      // The fallback trail checked below (ai_backend.attempts) is the AI SDK path's answer; the
      // pass-through path answers with the provider's own body (its fallbacks: ai-pass-through).
      passThrough: false,
    },
    { metrics: { enabled: true } },
  );
  admin = await tokenFor('np-admin', { admin: true });
});
afterAll(async () => {
  await gw.stop();
  await upstream.close();
});

const funded = (sub: string, tokens: number) => fundedUser(gw, admin, sub, tokens);
const balanceOf = (token: string) => balanceIn(gw, token);
async function fallbacksCounted(provider: string): Promise<number> {
  const text = await (await fetch(gw.url + '/metrics', { headers: { authorization: `Bearer ${admin}` } })).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('ai_backend_upstream_fallbacks_total{') && l.includes(`provider="${provider}"`))
    .reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
}

describe('six providers, one named provider down', () => {
  it('lists all six everywhere: ai.listProviders, ai.listAllowedModels, GET /v1/models', async () => {
    const token = await funded('np-list', 10);
    const list = (await rpcCall<{ providers: Array<{ id: string; name: string; serverPaid: boolean }> }>(gw.url, token, 'ai.listProviders'))
      .result!;
    expect(list.providers.map((p) => p.id)).toEqual(['anthropic', 'openai', 'google', 'openrouter', 'local', 'mist']);
    expect(list.providers.find((p) => p.id === 'local')).toMatchObject({ name: 'Local vLLM', serverPaid: true });
    const models = (await rpcCall<{ models: Record<string, string[]> }>(gw.url, token, 'ai.listAllowedModels')).result!.models;
    expect(Object.keys(models)).toHaveLength(6);
    const v1 = await new OpenAI({ baseURL: gw.url + '/v1', apiKey: token }).models.list();
    const ids = v1.data.map((m) => m.id);
    expect(ids).toEqual(expect.arrayContaining(['local/org/llama-3-8b', 'mist/mistral-small-latest', 'cheap']));
    expect(JSON.stringify(list)).not.toContain(upstream.url);
  });

  it('falls back from mist to the configured fallback; the breaker opens; only the serving target is charged', async () => {
    const token = await funded('np-user', 100_000);
    const openai = new OpenAI({ baseURL: gw.url + '/v1', apiKey: token, maxRetries: 0 });
    const anthropic = new Anthropic({ baseURL: gw.url, authToken: token, apiKey: null, maxRetries: 0 });
    upstream.failProvider('mist', { kind: 'status', status: 503 });
    const before = await fallbacksCounted('mist');
    try {
      const served: string[] = [];
      for (let i = 0; i < 4; i++) {
        const balance = await balanceOf(token);
        const sent = upstream.requests.length;
        let charged: number;
        if (i % 2 === 0) {
          const r = await openai.chat.completions.create({
            model: 'mist/mistral-small-latest',
            messages: [{ role: 'user', content: `call ${i}` }],
          });
          const ab = (
            r as unknown as {
              ai_backend: {
                provider: string;
                token_usage: { tokensCharged: number };
                attempts: Array<{ provider: string; reason: string }>;
              };
            }
          ).ai_backend;
          served.push(`${ab.provider}:${ab.attempts[0]!.reason}`);
          charged = ab.token_usage.tokensCharged;
          expect(r.model).toBe('local/org/llama-3-8b');
        } else {
          const r = await anthropic.messages.create({
            model: 'mist/mistral-small-latest',
            max_tokens: 64,
            messages: [{ role: 'user', content: `call ${i}` }],
          });
          const ab = (
            r as unknown as {
              ai_backend: {
                provider: string;
                token_usage: { tokensCharged: number };
                attempts: Array<{ provider: string; reason: string }>;
              };
            }
          ).ai_backend;
          served.push(`${ab.provider}:${ab.attempts[0]!.reason}`);
          charged = ab.token_usage.tokensCharged;
        }
        // Only the serving target is charged: the balance moved by exactly its charge.
        expect(await balanceOf(token)).toBe(balance - charged);
        // Once the breaker is open, mist gets no request at all.
        const toMist = upstream.requests.slice(sent).filter((q) => q.provider === 'mist').length;
        expect(toMist).toBe(i < 2 ? 1 : 0);
      }
      expect(served).toEqual(['local:upstream_5xx', 'local:upstream_5xx', 'local:circuit_open', 'local:circuit_open']);
      const health = (await rpcCall<{ providers: Record<string, { breaker: string }> }>(gw.url, token, 'ai.getRegistryHealth')).result!;
      expect(health.providers.mist!.breaker).toBe('open');
      expect(health.providers.local!.breaker).toBe('closed');
      expect((await fallbacksCounted('mist')) - before).toBe(4);
    } finally {
      upstream.failProvider('mist', undefined);
    }
  });
});
