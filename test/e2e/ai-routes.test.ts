import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import type { ConfigInput } from '@ai-backend/core/internal';
import { dropTestKeys, testRedis } from '@ai-backend/test-utils/services';
import { windowClock } from '@ai-backend/test-utils';
import {
  createTestUpstream,
  creditTokens,
  rpcCall,
  startAiServer,
  tokenFor,
  SERVER_KEY,
  waitFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { describeV1Paths } from './helpers/describeMatrix.js';

/**
 * Routes over two real servers sharing Redis, each deployment a named provider with a test
 * upstream of its own (its calls counted where they arrive): a deployment answering 429 with
 * Retry-After is cooled down on both instances, every call still succeeds and is charged exactly
 * what its answer reports; a target's rpm holds across both instances; a route of embedding
 * deployments serves /v1/embeddings the same way. And model names through
 * the vendors' own clients: a bare id one provider serves works, an ambiguous one is a 400
 * naming the candidates.
 */
const redisAt = await testRedis();
const MODEL = 'deploy-model';
const SHARED_MODEL = 'llama-3.3-70b';
const EMBED_MODEL = 'deploy-embed';
/** The model of route `own` (its deployments' cooldowns are their own: `dep-a/own-model`). */
const OWN_MODEL = 'own-model';
const CALLERS_KEY = 'sk-callers-own-key-for-routes';
const PRICE = { inputUsdPerMTok: 1, outputUsdPerMTok: 2 };
const DEPLOYMENTS = ['dep-a', 'dep-b', 'dep-c'] as const;

describeV1Paths('ai-routes', (path) => {
  describe.skipIf(!redisAt.ok)('routes on two instances sharing Redis', () => {
    const keyPrefix = `e2e-routes-${randomUUID()}:`;
    let upstream: TestUpstream;
    const deps: Record<string, TestUpstream> = {};
    let a: AiServer;
    let b: AiServer;
    let admin: string;
    // One clock for both instances: a test counting per-minute rpm starts a minute instead of waiting for one.
    const clock = windowClock();

    beforeAll(async () => {
      upstream = await createTestUpstream({ outputTokens: 16 });
      const providers: Record<string, unknown> = {};
      for (const id of DEPLOYMENTS) {
        deps[id] = await createTestUpstream({ outputTokens: 16 });
        providers[id] = {
          type: 'openai-compatible',
          baseUrl: deps[id].namedBaseUrl(id),
          apiKey: SERVER_KEY,
          // Callers may bring their own key for each deployment (route `own`).
          byok: true,
          models: { [OWN_MODEL]: PRICE, [MODEL]: PRICE, [SHARED_MODEL]: PRICE, [EMBED_MODEL]: { kind: 'embedding', inputUsdPerMTok: 1 } },
        };
      }
      const config: ConfigInput = {
        storage: { type: 'redis', redis: { host: redisAt.host, port: redisAt.port, keyPrefix } },
        serverProviders: ['anthropic', 'openai', 'google', 'openrouter', ...DEPLOYMENTS],
        ai: {
          ...upstream.aiConfig({ apiKey: SERVER_KEY }),
          providers: { ...upstream.aiConfig({ apiKey: SERVER_KEY }).providers, ...providers } as never,
          routes: {
            fast: { targets: [{ model: `dep-a/${MODEL}` }, { model: `dep-b/${MODEL}` }], cooldownSec: 5 },
            vectors: {
              strategy: 'priority',
              targets: [
                { model: `dep-a/${EMBED_MODEL}`, priority: 0 },
                { model: `dep-b/${EMBED_MODEL}`, priority: 1 },
              ],
              cooldownSec: 30,
            },
            capped: {
              strategy: 'priority',
              targets: [
                { model: `dep-c/${MODEL}`, rpm: 5, priority: 0 },
                { model: `dep-b/${MODEL}`, priority: 1 },
              ],
            },
            own: {
              strategy: 'priority',
              targets: [
                { model: `dep-a/${OWN_MODEL}`, rpm: 2, priority: 0 },
                { model: `dep-b/${OWN_MODEL}`, rpm: 2, priority: 1 },
              ],
              cooldownSec: 30,
            },
          },
          circuitBreaker: { failureThreshold: 1000 },
        },
      };
      a = await startAiServer(upstream, config, { clock: clock.now, path });
      b = await startAiServer(upstream, config, { clock: clock.now, path });
      admin = await tokenFor('routes-admin', { admin: true });
    });
    afterAll(async () => {
      await a?.stop();
      await b?.stop();
      await upstream?.close();
      for (const u of Object.values(deps)) await u.close();
      await dropTestKeys(redisAt, keyPrefix);
    });

    async function funded(sub: string, tokens: number): Promise<string> {
      await creditTokens(a.url, admin, sub, tokens, `routes-${sub}`);
      return tokenFor(sub);
    }
    const balance = async (token: string) =>
      (await rpcCall<{ virtualTokenBalance: number }>(a.url, token, 'billing.getTokenBalance')).result!.virtualTokenBalance;
    const chatCalls = (u: TestUpstream) => u.requests.filter((r) => r.format !== 'models').length;

    it('a deployment answering 429 with Retry-After gets at most a few of the next 100 calls over both instances; every call succeeds, charged what it reports', async () => {
      const token = await funded('routes-429', 10_000_000);
      const before = await balance(token);
      deps['dep-a']!.failProvider('dep-a', { kind: 'status', status: 429, retryAfter: 60 });
      const clients = [a, b].map((s) => new OpenAI({ baseURL: s.url + '/v1', apiKey: token, maxRetries: 0 }));
      let charged = 0;
      let next = 0;
      const served: string[] = [];
      await Promise.all(
        Array.from({ length: 4 }, async (_, worker) => {
          while (next < 100) {
            const i = next++;
            const { data, response } = await clients[(i + worker) % 2]!.chat.completions.create({
              model: 'fast',
              messages: [{ role: 'user', content: `call ${i}` }],
              max_tokens: 20,
            }).withResponse();
            const gateway = served_(data, response.headers);
            served.push(gateway.provider);
            charged += gateway.tokensCharged;
          }
        }),
      );
      expect(served).toHaveLength(100);
      expect(served.every((p) => p === 'dep-b')).toBe(true);
      expect(chatCalls(deps['dep-a']!)).toBeGreaterThanOrEqual(1);
      expect(chatCalls(deps['dep-a']!)).toBeLessThanOrEqual(4);
      expect(chatCalls(deps['dep-b']!)).toBe(100);
      // The balance is read once no hold is open on either instance: it is then exactly credited minus charged.
      await waitFor(async () => (a.runtime.billing.openHolds() + b.runtime.billing.openHolds() === 0 ? true : undefined), {
        what: 'every settle',
      });
      expect(await balance(token)).toBe(before - charged);
      // Both instances see the cooldown in their console figures.
      for (const s of [a, b])
        expect((await s.runtime.ai.routes()).find((r) => r.name === 'fast')!.targets[0]!.coolingDownUntil).not.toBeNull();
      deps['dep-a']!.failProvider('dep-a', undefined);
    });

    it("a target's rpm holds across both instances: the next calls go to the next group", async () => {
      // The counts are per minute: the calls share one.
      clock.startWindow();
      const token = await funded('routes-rpm', 10_000_000);
      deps['dep-b']!.reset();
      const replies = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          rpcCall(i % 2 ? b.url : a.url, token, 'ai.generateText', {
            content: `rpm ${i}`,
            systemPrompt: 's',
            model: 'capped',
            options: { maxTokens: 20 },
          }),
        ),
      );
      expect(replies.every((r) => r.result)).toBe(true);
      expect(chatCalls(deps['dep-c']!)).toBe(5);
      expect(chatCalls(deps['dep-b']!)).toBe(11);
    });

    it("a call with the caller's own key (x-provider-api-key) is served past the deployments' rpm and a 429's cooldown, not past a deployment that is down", async () => {
      clock.startWindow();
      const token = await funded('routes-own', 10_000_000);
      const own = [a, b].map(
        (s) => new OpenAI({ baseURL: s.url + '/v1', apiKey: token, maxRetries: 0, defaultHeaders: { 'x-provider-api-key': CALLERS_KEY } }),
      );
      const platform = [a, b].map((s) => new OpenAI({ baseURL: s.url + '/v1', apiKey: token, maxRetries: 0 }));
      const ask = async (client: OpenAI, content: string) => {
        const { data, response } = await client.chat.completions
          .create({ model: 'own', messages: [{ role: 'user', content }], max_tokens: 20 })
          .withResponse();
        return served_(data, response.headers);
      };
      const status = (p: Promise<unknown>) =>
        p.then(
          () => 200,
          (e: { status: number }) => e.status,
        );
      const lastCall = (id: string) => deps[id]!.requests.filter((r) => r.format !== 'models').at(-1);
      // Platform-paid calls use up both deployments' rpm this minute: the next one is refused.
      const platformServed: string[] = [];
      for (let i = 0; i < 4; i++) platformServed.push((await ask(platform[i % 2]!, `platform ${i}`)).provider);
      expect(platformServed).toEqual(['dep-a', 'dep-a', 'dep-b', 'dep-b']);
      expect(await status(ask(platform[0]!, 'platform refused'))).toBe(429);
      // A caller's own key has none of that capacity: served by the first deployment of the route's order, with that key.
      const before = await balance(token);
      for (let i = 0; i < 3; i++) expect((await ask(own[i % 2]!, `own ${i}`)).provider).toBe('dep-a');
      expect(lastCall('dep-a')).toMatchObject({ apiKey: CALLERS_KEY });
      expect(await balance(token)).toBe(before);
      // ... and used none of it: platform-paid calls are still refused this minute.
      expect(await status(ask(platform[1]!, 'platform still refused'))).toBe(429);

      // A deployment that is down (503 to the server's key) is down for a caller's key too.
      clock.startWindow();
      deps['dep-a']!.failProvider('dep-a', { kind: 'status', status: 503 });
      expect((await ask(platform[0]!, 'platform while dep-a fails')).provider).toBe('dep-b');
      deps['dep-a']!.failProvider('dep-a', undefined);
      expect((await ask(own[1]!, 'own while dep-a cools')).provider).toBe('dep-b');
      expect(lastCall('dep-b')).toMatchObject({ apiKey: CALLERS_KEY });

      // Past that cooldown (two windows: at least a minute), a 429 to the server's key is that
      // key's quota: it cools the deployment for platform-paid calls only.
      clock.startWindow();
      clock.startWindow();
      deps['dep-a']!.failProvider('dep-a', { kind: 'status', status: 429, retryAfter: 60 });
      expect(await ask(platform[1]!, 'platform while dep-a is throttled')).toMatchObject({ provider: 'dep-b' });
      deps['dep-a']!.failProvider('dep-a', undefined);
      for (let i = 0; i < 2; i++) expect((await ask(own[i % 2]!, `own after 429 ${i}`)).provider).toBe('dep-a');
      expect(lastCall('dep-a')).toMatchObject({ apiKey: CALLERS_KEY });
      expect(await ask(platform[0]!, 'platform after 429')).toMatchObject({ provider: 'dep-b' });
    });

    it("a signed-in caller whose stored key pays is served past the deployments' rpm and a 429's cooldown, unmetered; one the platform pays stays refused", async () => {
      // Two windows: past the 60 s cooldown the previous test's 429 left on dep-a (one window
      // ends it only as many ms after the window starts as that 429 came after its own start).
      clock.startWindow();
      clock.startWindow();
      // Both store a key for both deployments; only `stored` lets it pay first, `tokens` spends tokens first.
      const stored = await funded('routes-stored', 10_000_000);
      const tokens = await funded('routes-stored-tokens', 10_000_000);
      const storedKey = (id: string) => `sk-stored-${id}-for-routes`;
      for (const [sub, token] of [
        ['routes-stored', stored],
        ['routes-stored-tokens', tokens],
      ] as const) {
        for (const provider of ['dep-a', 'dep-b'])
          expect(
            (await rpcCall(a.url, token, 'auth.storeProviderKey', { email: sub, provider, apiKey: storedKey(provider) })).error,
          ).toBeUndefined();
        const order = sub === 'routes-stored' ? { consumptionOrder: ['byok', 'subscription', 'one_time'] } : {};
        expect((await rpcCall(a.url, token, 'user.updateUserPreferences', { byokEnabled: true, ...order })).error).toBeUndefined();
      }
      const client = (token: string, s: AiServer) => new OpenAI({ baseURL: s.url + '/v1', apiKey: token, maxRetries: 0 });
      const ask = async (token: string, s: AiServer, content: string) => {
        const { data, response } = await client(token, s)
          .chat.completions.create({ model: 'own', messages: [{ role: 'user', content }], max_tokens: 20 })
          .withResponse();
        return served_(data, response.headers);
      };
      const refusal = (p: Promise<unknown>) =>
        p.then(
          () => undefined,
          (e: { status: number; error?: unknown }) => ({ status: e.status, body: JSON.stringify(e.error ?? {}) }),
        );
      const lastCall = (id: string) => deps[id]!.requests.filter((r) => r.format !== 'models').at(-1);
      // Platform-paid calls use up both deployments' rpm this minute.
      const platformServed: string[] = [];
      for (let i = 0; i < 4; i++) platformServed.push((await ask(tokens, i % 2 ? b : a, `platform ${i}`)).provider);
      expect(platformServed).toEqual(['dep-a', 'dep-a', 'dep-b', 'dep-b']);
      const refused = await refusal(ask(tokens, a, 'platform refused'));
      expect(refused).toMatchObject({ status: 429 });
      expect(refused!.body).toContain('is at its rpm/tpm limit');
      // The caller whose stored key pays: served by the first deployment of the route's order, with that key, uncharged.
      const before = await balance(stored);
      for (let i = 0; i < 3; i++) expect((await ask(stored, i % 2 ? b : a, `stored ${i}`)).provider).toBe('dep-a');
      expect(lastCall('dep-a')).toMatchObject({ apiKey: storedKey('dep-a') });
      expect(await balance(stored)).toBe(before);
      // ... and used none of the deployments' rpm: platform-paid calls are still refused, the
      // caller with a stored key whose tokens pay first as well (with the route's own refusal).
      const still = await refusal(ask(tokens, b, 'platform still refused'));
      expect(still).toMatchObject({ status: 429 });
      expect(still!.body).toContain('is at its rpm/tpm limit');

      // A 429 to the server's key cools dep-a for platform-paid calls; the stored key still reaches it.
      clock.startWindow();
      deps['dep-a']!.failProvider('dep-a', { kind: 'status', status: 429, retryAfter: 60 });
      expect(await ask(tokens, b, 'platform while dep-a is throttled')).toMatchObject({ provider: 'dep-b' });
      deps['dep-a']!.failProvider('dep-a', undefined);
      expect(await ask(tokens, a, 'platform after 429')).toMatchObject({ provider: 'dep-b' });
      expect(await ask(stored, b, 'stored after 429')).toMatchObject({ provider: 'dep-a' });
      expect(lastCall('dep-a')).toMatchObject({ apiKey: storedKey('dep-a') });
    });

    it('route names are listed by GET /v1/models beside provider/model ids', async () => {
      const token = await funded('routes-list', 10);
      const ids = (await new OpenAI({ baseURL: a.url + '/v1', apiKey: token }).models.list()).data.map((m) => m.id);
      expect(ids).toEqual(expect.arrayContaining(['fast', 'capped', `dep-a/${MODEL}`, 'openai/gpt-4.1-nano']));
    });

    it('GET /v1/models through an API key lists only the routes the key may use (by name, by glob, by target)', async () => {
      const owner = await funded('routes-list-keys', 10);
      const listed = async (models: string[]) => {
        const made = await rpcCall<{ key: string }>(a.url, owner, 'keys.create', { name: `list-${models.join(',')}`, models });
        const client = new OpenAI({ baseURL: a.url + '/v1', apiKey: made.result!.key, maxRetries: 0 });
        const ids = (await client.models.list()).data.map((m) => m.id);
        const routes = ids.filter((id) => ['fast', 'vectors', 'capped', 'own'].includes(id)).sort();
        // retrieve agrees with the list: a route the key may not use is not found.
        const fast = await client.models.retrieve('fast').then(
          () => 200,
          (e: { status: number }) => e.status,
        );
        return { routes, fast };
      };
      expect(await listed(['openai/*'])).toEqual({ routes: [], fast: 404 });
      expect(await listed(['fast'])).toEqual({ routes: ['fast'], fast: 200 });
      expect(await listed(['fa*', 'cap*'])).toEqual({ routes: ['capped', 'fast'], fast: 200 });
      // A target's provider/model admits every route with that deployment.
      expect(await listed([`dep-c/${MODEL}`])).toEqual({ routes: ['capped'], fast: 404 });
    });

    it('bare names through the openai and @anthropic-ai/sdk clients: one provider serves it → it answers; several → 400 naming each', async () => {
      const token = await funded('routes-bare', 1_000_000);
      const openai = new OpenAI({ baseURL: a.url + '/v1', apiKey: token, maxRetries: 0 });
      const anthropic = new Anthropic({ baseURL: b.url, authToken: token, apiKey: null, maxRetries: 0 });
      upstream.reset();
      const o = await openai.chat.completions
        .create({ model: 'gpt-4.1-nano', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20 })
        .withResponse();
      expect(served_(o.data, o.response.headers)).toMatchObject({ provider: 'openai', model: 'gpt-4.1-nano' });
      expect(upstream.requests.at(-1)).toMatchObject({ provider: 'openai', model: 'gpt-4.1-nano' });
      const m = await anthropic.messages.create({
        model: 'claude-sonnet-4-5',
        max_tokens: 20,
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(m.content[0]).toMatchObject({ type: 'text' });
      expect(upstream.requests.at(-1)).toMatchObject({ provider: 'anthropic', model: 'claude-sonnet-4-5' });
      const failed = (p: Promise<unknown>) =>
        p.then(
          () => ({ status: 200, message: '' }),
          (e: unknown) => e as { status: number; message: string },
        );
      for (const err of [
        await failed(openai.chat.completions.create({ model: SHARED_MODEL, messages: [{ role: 'user', content: 'hi' }] })),
        await failed(anthropic.messages.create({ model: SHARED_MODEL, max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] })),
      ]) {
        expect(err.status).toBe(400);
        for (const id of DEPLOYMENTS) expect(err.message).toContain(`${id}/${SHARED_MODEL}`);
      }
    });

    it('a route serves /v1/embeddings (embeddings.create): a failing deployment is cooled down on both instances, every call charged once for the one that served', async () => {
      const token = await funded('routes-embed', 10_000_000);
      const before = await balance(token);
      const embedCalls = (u: TestUpstream) => u.requests.filter((r) => r.format === 'embeddings').length;
      deps['dep-a']!.failProvider('dep-a', { kind: 'status', status: 503 });
      const clients = [a, b].map((s) => new OpenAI({ baseURL: s.url + '/v1', apiKey: token, maxRetries: 0 }));
      let charged = 0;
      const served: string[] = [];
      for (let i = 0; i < 10; i++) {
        const r = (await clients[i % 2]!.embeddings.create({ model: 'vectors', input: [`text ${i}`, 'another text'] })) as unknown as {
          data: Array<{ embedding: number[] }>;
          ai_backend: { provider: string; model: string; token_usage: { tokensCharged: number } };
        };
        expect(r.data).toHaveLength(2);
        expect(r.ai_backend.model).toBe(EMBED_MODEL);
        served.push(r.ai_backend.provider);
        charged += r.ai_backend.token_usage.tokensCharged;
      }
      expect(served).toEqual(Array(10).fill('dep-b'));
      expect(embedCalls(deps['dep-a']!)).toBe(1);
      expect(embedCalls(deps['dep-b']!)).toBe(10);
      expect(await balance(token)).toBe(before - charged);
      deps['dep-a']!.failProvider('dep-a', undefined);
    });
  });
});

/**
 * Which target served a /v1 answer and what it was charged: the `ai_backend` field on the SDK
 * path, the `x-ai-backend-*` headers on the pass-through path (docs/ai.md#pass-through-aipassthrough).
 */
function served_(body: unknown, headers: Headers): { provider: string; model: string; tokensCharged: number } {
  if (headers.get('x-ai-backend-path') === 'pass-through') {
    const [provider, ...model] = headers.get('x-ai-backend-model')!.split('/');
    return { provider: provider!, model: model.join('/'), tokensCharged: Number(headers.get('x-ai-backend-tokens-charged')) };
  }
  // A BYOK answer carries no token_usage: nothing was charged.
  const g = (body as { ai_backend: { provider: string; model: string; token_usage?: { tokensCharged: number } } }).ai_backend;
  return { provider: g.provider, model: g.model, tokensCharged: g.token_usage?.tokensCharged ?? 0 };
}
