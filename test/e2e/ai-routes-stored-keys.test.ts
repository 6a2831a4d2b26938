import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
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
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { describeV1Paths } from './helpers/describeMatrix.js';

/**
 * Route calls a signed-in caller's stored key pays (docs/ai.md#routes), on two real servers
 * sharing Redis, each deployment a named provider with a test upstream of its own: a call the
 * platform's plan accepts is planned again for the caller's keys (past the deployments' rpm and a
 * 429's cooldown another instance wrote), and a call with fallbacks whose route refuses the
 * platform is served by the route with the caller's key before any fallback. Through the `openai`
 * client (both /v1 paths) and JSON-RPC ai.generateText.
 */
const redisAt = await testRedis();
const ONE = 'm-one';
const TWO = 'm-two';
const PRICE = { inputUsdPerMTok: 1, outputUsdPerMTok: 2 };
const DEPLOYMENTS = ['dep-a', 'dep-b', 'dep-c', 'fb'] as const;
const storedKey = (id: string) => `sk-stored-${id}-of-the-caller`;

type Served = { provider: string; model: string; charged: number };
type Caller = 'stored' | 'tokens' | 'keyless' | 'onlyB';
const KEYS: Record<Caller, readonly string[]> = { stored: DEPLOYMENTS, tokens: DEPLOYMENTS, keyless: [], onlyB: ['dep-b'] };

describeV1Paths('ai-routes-stored-keys', (path) => {
  describe.skipIf(!redisAt.ok)('route calls a stored key pays, on two instances sharing Redis', () => {
    const keyPrefix = `e2e-routes-stored-${randomUUID()}:`;
    let upstream: TestUpstream;
    const deps: Record<string, TestUpstream> = {};
    let a: AiServer;
    let b: AiServer;
    // Callers: `stored` spends its stored keys first; `tokens` has the same keys and spends tokens
    // first; `keyless` spends stored keys first but stored none; `onlyB` spends its one stored key
    // (for dep-b) first.
    const tokens: Record<Caller, string> = { stored: '', tokens: '', keyless: '', onlyB: '' };
    const clock = windowClock();

    beforeAll(async () => {
      upstream = await createTestUpstream({ outputTokens: 16 });
      const providers: Record<string, unknown> = {};
      for (const id of DEPLOYMENTS) {
        deps[id] = await createTestUpstream({ outputTokens: 16 });
        const models = { [ONE]: PRICE, [TWO]: PRICE };
        providers[id] = { type: 'openai-compatible', baseUrl: deps[id].namedBaseUrl(id), apiKey: SERVER_KEY, byok: true, models };
      }
      const config: ConfigInput = {
        storage: { type: 'redis', redis: { host: redisAt.host, port: redisAt.port, keyPrefix } },
        serverProviders: ['anthropic', 'openai', 'google', 'openrouter', ...DEPLOYMENTS],
        ai: {
          ...upstream.aiConfig({ apiKey: SERVER_KEY }),
          providers: { ...upstream.aiConfig({ apiKey: SERVER_KEY }).providers, ...providers } as never,
          routes: {
            // Two deployments of one provider (one key pays both), the preferred one with an rpm.
            solo: {
              strategy: 'priority',
              targets: [
                { model: `dep-a/${ONE}`, rpm: 1, priority: 0 },
                { model: `dep-a/${TWO}`, priority: 1 },
              ],
            },
            // Two providers, the preferred one cooled by a 429 to the server's key.
            pair: {
              strategy: 'priority',
              targets: [
                { model: `dep-b/${ONE}`, priority: 0 },
                { model: `dep-c/${ONE}`, priority: 1 },
              ],
              cooldownSec: 60,
            },
            // Two providers, the platform's plan always starting at dep-a.
            split: {
              strategy: 'priority',
              targets: [
                { model: `dep-a/${TWO}`, priority: 0 },
                { model: `dep-b/${TWO}`, priority: 1 },
              ],
            },
            // One deployment with an rpm, asked for with fallbacks.
            spill: { targets: [{ model: `dep-c/${TWO}`, rpm: 1 }] },
          },
          circuitBreaker: { failureThreshold: 1000 },
        },
      };
      a = await startAiServer(upstream, config, { clock: clock.now, path });
      b = await startAiServer(upstream, config, { clock: clock.now, path });
      const admin = await tokenFor('routes-stored-admin', { admin: true });
      for (const who of ['stored', 'tokens', 'keyless', 'onlyB'] as const) {
        const sub = `routes-stored-${who}-${path}`;
        await creditTokens(a.url, admin, sub, 10_000_000, sub);
        const token = await tokenFor(sub);
        tokens[who] = token;
        for (const provider of KEYS[who])
          expect(
            (await rpcCall(a.url, token, 'auth.storeProviderKey', { email: sub, provider, apiKey: storedKey(provider) })).error,
          ).toBeUndefined();
        const order = who === 'tokens' ? {} : { consumptionOrder: ['byok', 'subscription', 'one_time'] };
        expect((await rpcCall(a.url, token, 'user.updateUserPreferences', { byokEnabled: true, ...order })).error).toBeUndefined();
      }
    });
    afterAll(async () => {
      await a?.stop();
      await b?.stop();
      await upstream?.close();
      for (const u of Object.values(deps)) await u.close();
      await dropTestKeys(redisAt, keyPrefix);
    });

    const balance = async (token: string) =>
      (await rpcCall<{ virtualTokenBalance: number }>(a.url, token, 'billing.getTokenBalance')).result!.virtualTokenBalance;
    const lastCall = (id: string) => deps[id]!.requests.filter((r) => r.format !== 'models').at(-1);

    /** One call through the openai client (`models`: OpenRouter's fallbacks field). */
    async function viaV1(token: string, s: AiServer, model: string, content: string, fallbacks?: string[]): Promise<Served> {
      const client = new OpenAI({ baseURL: s.url + '/v1', apiKey: token, maxRetries: 0 });
      const body = { model, messages: [{ role: 'user' as const, content }], max_tokens: 20, ...(fallbacks ? { models: fallbacks } : {}) };
      const { data, response } = await client.chat.completions.create(body).withResponse();
      const h = response.headers;
      if (h.get('x-ai-backend-path') === 'pass-through') {
        const [provider, ...rest] = h.get('x-ai-backend-model')!.split('/');
        return { provider: provider!, model: rest.join('/'), charged: Number(h.get('x-ai-backend-tokens-charged')) };
      }
      // A BYOK answer carries no token_usage: nothing was charged.
      const g = (data as unknown as { ai_backend: { provider: string; model: string; token_usage?: { tokensCharged: number } } })
        .ai_backend;
      return { provider: g.provider, model: g.model, charged: g.token_usage?.tokensCharged ?? 0 };
    }

    /** One call through JSON-RPC ai.generateText. */
    async function viaRpc(token: string, s: AiServer, model: string, content: string, fallbacks?: string[]): Promise<Served> {
      const r = await rpcCall(s.url, token, 'ai.generateText', {
        content,
        systemPrompt: 'be brief',
        model,
        options: { maxTokens: 20 },
        ...(fallbacks ? { fallbacks } : {}),
      });
      expect(r.error).toBeUndefined();
      const d = r.result.data as Served;
      return { provider: d.provider, model: d.model, charged: r.result.tokenUsage?.tokensCharged ?? 0 };
    }

    it("a call the route accepts and the caller's stored key pays is planned for that key: past a deployment's rpm used up on the other instance", async () => {
      for (const via of [viaV1, viaRpc]) {
        clock.startWindow();
        // The platform uses up dep-a/m-one's rpm on one instance; the next platform call, on the other, is moved to m-two.
        expect(await via(tokens.tokens, a, 'solo', 'platform 1')).toMatchObject({ provider: 'dep-a', model: ONE });
        expect(await via(tokens.tokens, b, 'solo', 'platform 2')).toMatchObject({ provider: 'dep-a', model: TWO });
        // The stored key is the caller's quota, not the deployment's: it is served by m-one, with that key, uncharged.
        const before = await balance(tokens.stored);
        for (const s of [b, a])
          expect(await via(tokens.stored, s, 'solo', 'stored')).toMatchObject({ provider: 'dep-a', model: ONE, charged: 0 });
        expect(lastCall('dep-a')).toMatchObject({ model: ONE, apiKey: storedKey('dep-a') });
        expect(await balance(tokens.stored)).toBe(before);
        // ... and used none of the rpm of the minute: the platform's calls still go to m-two.
        expect(await via(tokens.tokens, a, 'solo', 'platform 3')).toMatchObject({ provider: 'dep-a', model: TWO });
      }
    });

    it("a call the route accepts is served past a 429's cooldown another instance wrote, with the caller's stored key for that deployment", async () => {
      for (const via of [viaV1, viaRpc]) {
        // dep-b answers 429 to the server's key on one instance: cooled for platform-paid calls on both.
        deps['dep-b']!.failProvider('dep-b', { kind: 'status', status: 429, retryAfter: 60 });
        const platform = await via(tokens.tokens, a, 'pair', 'platform while dep-b is throttled');
        deps['dep-b']!.failProvider('dep-b', undefined);
        expect(platform).toMatchObject({ provider: 'dep-c' });
        expect(await via(tokens.tokens, b, 'pair', 'platform after 429')).toMatchObject({ provider: 'dep-c' });
        // The caller's own key for dep-b was never throttled: the route's first choice serves it, with that key.
        const served = await via(tokens.stored, b, 'pair', 'stored after 429');
        expect(served).toMatchObject({ provider: 'dep-b', model: ONE, charged: 0 });
        expect(lastCall('dep-b')).toMatchObject({ apiKey: storedKey('dep-b') });
        // Platform-paid calls still skip dep-b.
        expect(await via(tokens.tokens, a, 'pair', 'platform still cooled')).toMatchObject({ provider: 'dep-c' });
        await clearCooldowns();
      }
    });

    it("a call with fallbacks whose route refuses the platform is served by the route with the caller's stored key; without a key that pays, by its fallback", async () => {
      for (const via of [viaV1, viaRpc]) {
        clock.startWindow();
        const fallbacks = [`fb/${ONE}`];
        expect(await via(tokens.tokens, a, 'spill', 'platform uses the rpm', fallbacks)).toMatchObject({ provider: 'dep-c', model: TWO });
        // The platform's calls now go to the fallback, charged.
        const platform = await via(tokens.tokens, b, 'spill', 'platform to the fallback', fallbacks);
        expect(platform).toMatchObject({ provider: 'fb', model: ONE });
        expect(platform.charged).toBeGreaterThan(0);
        // The caller whose stored key pays first: the model it asked for, on its own key, uncharged.
        const before = await balance(tokens.stored);
        expect(await via(tokens.stored, b, 'spill', 'stored', fallbacks)).toMatchObject({ provider: 'dep-c', model: TWO, charged: 0 });
        expect(lastCall('dep-c')).toMatchObject({ model: TWO, apiKey: storedKey('dep-c') });
        expect(await balance(tokens.stored)).toBe(before);
        // Stored keys first but none stored: the fallback, on the platform, as before.
        const keyless = await via(tokens.keyless, a, 'spill', 'keyless', fallbacks);
        expect(keyless).toMatchObject({ provider: 'fb', model: ONE });
        expect(keyless.charged).toBeGreaterThan(0);
        expect(lastCall('fb')).toMatchObject({ apiKey: SERVER_KEY });
      }
    });

    it("a caller whose stored key is for another deployment of the route than the platform's plan picked is served there, with that key, every time", async () => {
      for (const via of [viaV1, viaRpc]) {
        clock.startWindow();
        // `split`'s plan starts at dep-a, for which `onlyB` has no key: the one it has (dep-b's) pays, on dep-b, not its tokens.
        const before = await balance(tokens.onlyB);
        for (const s of [a, b]) expect(await via(tokens.onlyB, s, 'split', 'only b')).toMatchObject({ provider: 'dep-b', charged: 0 });
        expect(lastCall('dep-b')).toMatchObject({ apiKey: storedKey('dep-b') });
        expect(await balance(tokens.onlyB)).toBe(before);
        // A caller whose tokens pay first is served where the platform's plan says, charged.
        const platform = await via(tokens.tokens, a, 'split', 'tokens first');
        expect(platform).toMatchObject({ provider: 'dep-a' });
        expect(platform.charged).toBeGreaterThan(0);
      }
    });

    /** Past every cooldown (two windows: at least a minute on the clock both instances count by). */
    async function clearCooldowns(): Promise<void> {
      clock.startWindow();
      clock.startWindow();
    }
  });
});
