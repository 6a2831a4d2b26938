import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { procedureIndex } from '@ai-backend/core/internal';
import {
  callVia,
  createTestUpstream,
  creditTokens,
  mcpClient,
  SERVER_KEY,
  startAiServer,
  tokenFor,
  type AiServer,
  type Entry,
  type Outcome,
  type TestUpstream,
} from './helpers/aiGateway.js';

/**
 * Every procedure of the `ai` namespace over a real entry point, with a success and a refusal
 * each. A last test checks that no ai.* procedure was left out.
 */
let upstream: TestUpstream;
let gw: AiServer;
let user: string;
const seen: string[] = [];
const covered = new Map<string, { ok: number; refused: number }>();

async function call(entry: Entry, token: string | null, path: string, input?: unknown): Promise<Outcome> {
  const out = await callVia(gw, entry, token, path, input, seen);
  const c = covered.get(path) ?? { ok: 0, refused: 0 };
  if (out.ok) c.ok++;
  else c.refused++;
  covered.set(path, c);
  return out;
}
const ok = (o: Outcome) => {
  if (!o.ok) throw new Error(`expected success, got ${o.code}: ${o.message}`);
  return o.data;
};

beforeAll(async () => {
  upstream = await createTestUpstream();
  const { providers } = upstream.aiConfig({ apiKey: SERVER_KEY });
  gw = await startAiServer(upstream, {
    storage: { type: 'memory' },
    ai: { providers: { ...providers, openai: { ...providers.openai, blockedModels: ['*-nano'] } } },
  });
  user = await tokenFor('ai-procs-user');
  await creditTokens(gw.url, await tokenFor('ai-procs-admin', { admin: true }), 'ai-procs-user', 50_000, 'ai-procs-1');
});
afterAll(async () => {
  await gw.stop();
  await upstream.close();
});

describe('ai.listProviders', () => {
  it('over /trpc (GET) anonymously: four real ids, server-paid, registry source; no keys or URLs', async () => {
    const r = ok(await call('trpc', null, 'ai.listProviders'));
    expect(r.providers.map((p: { id: string }) => p.id)).toEqual(['anthropic', 'openai', 'google', 'openrouter']);
    expect(r.providers.every((p: { serverPaid: boolean; byok: boolean }) => p.serverPaid && p.byok)).toBe(true);
    expect(r.source).toMatchObject({
      retrievedAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
      urls: { anthropic: expect.stringMatching(/^https:/) },
    });
    expect(JSON.stringify(r)).not.toContain(upstream.url);
    expect(JSON.stringify(r)).not.toContain('SECRET');
  });
  it('over MCP as a tool; a forged token is refused, never treated as anonymous', async () => {
    expect(ok(await call('mcp', user, 'ai.listProviders')).defaultProvider).toBe('anthropic');
    const forged = user.slice(0, -4) + (user.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    expect(await call('rpc', forged, 'ai.listProviders')).toMatchObject({ ok: false, code: 'UNAUTHORIZED' });
  });
});

describe('ai.listProvidersBYOK', () => {
  it('over /rpc: the providers open to own keys; a forged token is refused', async () => {
    expect(ok(await call('rpc', null, 'ai.listProvidersBYOK'))).toEqual({
      providers: [
        { id: 'anthropic', name: 'Anthropic' },
        { id: 'openai', name: 'OpenAI' },
        { id: 'google', name: 'Google' },
        { id: 'openrouter', name: 'OpenRouter' },
      ],
    });
    expect(await call('trpc', 'not-a-jwt', 'ai.listProvidersBYOK')).toMatchObject({ ok: false, code: 'UNAUTHORIZED' });
  });
});

describe('ai.listAllowedModels', () => {
  it('all providers, one by alias, restrictions applied (over /trpc and MCP)', async () => {
    const all = ok(await call('trpc', null, 'ai.listAllowedModels'));
    expect(Object.keys(all.models)).toEqual(['anthropic', 'openai', 'google', 'openrouter']);
    expect(all.models.openai).toContain('gpt-5-mini');
    expect(all.models.openai.some((m: string) => m.endsWith('-nano'))).toBe(false);
    expect(ok(await call('mcp', user, 'ai.listAllowedModels', { provider: 'provider_c' }))).toEqual({
      provider: 'google',
      models: all.models.google,
    });
  });
  it('an unknown provider is BAD_REQUEST on /rpc and a tool error on MCP', async () => {
    expect(await call('rpc', null, 'ai.listAllowedModels', { provider: 'provider_e' })).toMatchObject({ ok: false, code: 'BAD_REQUEST' });
    expect(await call('mcp', user, 'ai.listAllowedModels', { provider: 'nope' })).toMatchObject({ ok: false, code: 'BAD_REQUEST' });
  });
});

describe('ai.validateProvider', () => {
  it('a real, token-free request with the given key; valid and invalid keys told apart', async () => {
    const good = ok(await call('rpc', null, 'ai.validateProvider', { provider: 'provider_a', apiKey: 'sk-check-me-0000' }));
    expect(good).toMatchObject({ provider: 'anthropic', valid: true, status: 200, latencyMs: expect.any(Number) });
    expect(upstream.requests.at(-1)).toMatchObject({ method: 'GET', path: '/v1/models', apiKey: 'sk-check-me-0000' });
    const bad = ok(await call('trpc', null, 'ai.validateProvider', { provider: 'google', apiKey: 'invalid-key-SECRET-1' }));
    expect(bad).toMatchObject({ provider: 'google', valid: false, reason: 'invalid_key', status: 401 });
    expect(JSON.stringify(bad)).not.toContain('invalid-key-SECRET-1');
  });
  it('openrouter is outside its three-value enum; an empty key is refused; neither reaches the upstream', async () => {
    const before = upstream.requests.length;
    expect(await call('rpc', null, 'ai.validateProvider', { provider: 'openrouter', apiKey: 'sk-x-12345678' })).toMatchObject({
      ok: false,
      code: 'BAD_REQUEST',
    });
    expect(await call('trpc', null, 'ai.validateProvider', { provider: 'openai', apiKey: '' })).toMatchObject({
      ok: false,
      code: 'BAD_REQUEST',
    });
    expect(upstream.requests).toHaveLength(before);
  });
  it('is not an MCP tool (its input is a key)', async () => {
    const client = await mcpClient(gw.url, user);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['generateText', 'listProviders', 'listAllowedModels']));
      expect(names).not.toContain('validateProvider');
    } finally {
      await client.close();
    }
  });
});

describe('ai.generateText refusals before any upstream request', () => {
  it('invalid input, unknown prompt name, too many tokens, blocked model, oversized content', async () => {
    const before = upstream.requests.length;
    expect(await call('rpc', user, 'ai.generateText', { content: '', systemPrompt: 's' })).toMatchObject({
      ok: false,
      code: 'BAD_REQUEST',
    });
    expect(await call('rpc', user, 'ai.generateText', { content: 'x' })).toMatchObject({ ok: false, code: 'BAD_REQUEST' });
    expect(await call('trpc', user, 'ai.generateText', { content: 'x', systemPrompt: '@no-such-prompt' })).toMatchObject({
      ok: false,
      code: 'NOT_FOUND',
    });
    expect(
      await call('rpc', user, 'ai.generateText', { content: 'x', systemPrompt: 's', options: { maxTokens: 10_000_000 } }),
    ).toMatchObject({ ok: false, appCode: 'INVALID_PARAMS' });
    expect(
      await call('rpc', user, 'ai.generateText', { content: 'x', systemPrompt: 's', provider: 'openai', options: { model: 'gpt-5-nano' } }),
    ).toMatchObject({ ok: false, code: 'FORBIDDEN', details: { reason: 'model_not_allowed' } });
    expect(await call('mcp', user, 'ai.generateText', { content: 'x', systemPrompt: 's', provider: 'provider_z' })).toMatchObject({
      ok: false,
      code: 'BAD_REQUEST',
    });
    expect(await call('rpc', user, 'ai.generateText', { content: 'x'.repeat(200_001), systemPrompt: 's' })).toMatchObject({
      ok: false,
      code: 'PAYLOAD_TOO_LARGE',
    });
    expect(upstream.requests).toHaveLength(before);
  });
  it('succeeds on every entry point with an aliased provider', async () => {
    for (const entry of ['trpc', 'rpc', 'mcp'] as const) {
      expect(
        ok(await call(entry, user, 'ai.generateText', { content: 'x', systemPrompt: '@support', provider: 'provider_d' })).data.provider,
      ).toBe('openrouter');
    }
  });
});

describe('ai.getRegistryHealth', () => {
  it('healthy, then degraded after a failing upstream call (with the reason), healthy again after a success', async () => {
    const h = ok(await call('rpc', null, 'ai.getRegistryHealth'));
    expect(h).toMatchObject({ status: 'healthy', summary: { providers: 4, serverPaidProviders: 4, byokProviders: 4 } });
    expect(h.providers.openrouter).toMatchObject({ available: true, calls: 3, failures: 0 });

    expect(
      await call('rpc', user, 'ai.generateText', { content: '[[upstream:500]]', systemPrompt: 's', provider: 'google' }),
    ).toMatchObject({ ok: false, code: 'BAD_GATEWAY' });
    const d = ok(await call('trpc', null, 'ai.getRegistryHealth'));
    expect(d.status).toBe('degraded');
    expect(d.providers.google).toMatchObject({ calls: 1, failures: 1, lastFailure: { reason: 'upstream_5xx' } });
    expect(JSON.stringify(d)).not.toContain('system prompt');

    ok(await call('rpc', user, 'ai.generateText', { content: 'ok now', systemPrompt: 's', provider: 'google' }));
    expect(ok(await call('rpc', null, 'ai.getRegistryHealth')).status).toBe('healthy');
  });
  it('unhealthy, with error details, on a server where no provider is usable; /health/ready says 503', async () => {
    const dead = await startAiServer(upstream, { storage: { type: 'memory' }, serverProviders: [], ai: { byokProviders: [] } });
    try {
      const r = await callVia(dead, 'rpc', null, 'ai.getRegistryHealth');
      expect(r).toMatchObject({
        ok: true,
        data: { status: 'unhealthy', error: { message: expect.stringMatching(/no provider is usable/) } },
      });
      const c = covered.get('ai.getRegistryHealth')!;
      c.refused++;
      expect((await fetch(dead.url + '/health/ready')).status).toBe(503);
      expect((await fetch(dead.url + '/health')).status).toBe(200);
    } finally {
      await dead.stop();
    }
  });
});

describe('ai.streamText (streamed over /trpc in ai-streaming.test.ts)', () => {
  it('over /rpc and MCP: the final result with usage; a caller without balance is refused', async () => {
    for (const entry of ['rpc', 'mcp'] as const) {
      const r = ok(await call(entry, user, 'ai.streamText', { content: 'hi', systemPrompt: '@support', provider: 'google' }));
      expect(r.tokenUsage.tokensUsed).toBe(r.data.usage.totalTokens);
    }
    const broke = await call('rpc', await tokenFor('ai-procs-broke'), 'ai.streamText', { content: 'hi', systemPrompt: 's' });
    expect(broke.ok === false && broke.appCode).toBe('PAYMENT_REQUIRED');
  });
});

describe('ai.embed (the openai client in ai-embeddings.test.ts)', () => {
  it('over /rpc and /trpc: vectors, charged by input tokens; a language model and a caller without balance are refused', async () => {
    for (const entry of ['rpc', 'trpc'] as const) {
      const r = ok(await call(entry, user, 'ai.embed', { model: 'openai/text-embedding-3-small', input: ['one', 'two'] }));
      expect(r.data.embeddings).toHaveLength(2);
      expect(r.tokenUsage.tokensUsed).toBe(r.data.usage.inputTokens);
    }
    expect(await call('rpc', user, 'ai.embed', { model: 'openai/gpt-5-mini', input: 'x' })).toMatchObject({
      ok: false,
      code: 'BAD_REQUEST',
    });
    const broke = await call('rpc', await tokenFor('ai-procs-broke'), 'ai.embed', { model: 'openai/text-embedding-3-small', input: 'hi' });
    expect(broke.ok === false && broke.appCode).toBe('PAYMENT_REQUIRED');
  });
});

describe('coverage', () => {
  it('every ai.* procedure was called over a real entry point, with a success and a refusal', () => {
    const paths = [...procedureIndex(gw.runtime.router).keys()].filter((p) => p.startsWith('ai.')).sort();
    expect(paths).toHaveLength(8);
    for (const p of paths) {
      expect(covered.get(p)?.ok, `${p} success`).toBeGreaterThan(0);
      expect(covered.get(p)?.refused, `${p} refusal`).toBeGreaterThan(0);
    }
    expect(seen.join('\n')).not.toContain('SECRET');
  });
});
