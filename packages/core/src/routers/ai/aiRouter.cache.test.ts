import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '@ai-backend/test-utils';
import {
  dropTestKeys,
  dropTestSchema,
  testPostgres,
  testPostgresOptions,
  testRedis,
  testRedisOptions,
} from '@ai-backend/test-utils/services';
import type { ConfigInput } from '../../config/schema.js';
import type { Storage } from '../../kernel/Storage.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import { RedisStorage } from '../../storage/RedisStorage.js';
import { PostgresStorage } from '../../storage/sql/PostgresStorage.js';
import { SqliteStorage } from '../../storage/sql/SqliteStorage.js';
import type { Identity } from '../../kernel/identity.js';
import { alice, bob, createAiHarness, keyWith, USER_KEY, type AiHarness } from './__tests__/aiHarness.js';

/**
 * The response cache (ai.cache) over the real engine, billing and a test upstream, on every
 * store it can live in: memory, SQLite, PostgreSQL and Redis (the last two skip without their
 * service; CI requires them).
 */
const redis = await testRedis();
const postgres = await testPostgres();

interface Backend {
  name: string;
  ok: boolean;
  /** A fresh, empty store (the runtime closes it) and what removes its data afterwards. */
  open(): Promise<{ store: Storage; cleanup(): Promise<void> }>;
}
const backends: Backend[] = [
  { name: 'memory', ok: true, open: async () => ({ store: new MemoryStorage(), cleanup: async () => undefined }) },
  {
    name: 'sqlite',
    ok: true,
    open: async () => {
      const dir = await mkdtemp(join(tmpdir(), 'ai-cache-'));
      return { store: await SqliteStorage.open({ file: join(dir, 'data.db') }), cleanup: () => rm(dir, { recursive: true, force: true }) };
    },
  },
  {
    name: 'postgres',
    ok: postgres.ok,
    open: async () => {
      const opts = testPostgresOptions(postgres, 'aicache');
      return { store: await PostgresStorage.connect(opts), cleanup: () => dropTestSchema(postgres, opts.schema) };
    },
  },
  {
    name: 'redis',
    ok: redis.ok,
    open: async () => {
      const opts = testRedisOptions(redis, 'aicache');
      return { store: await RedisStorage.connect(opts), cleanup: () => dropTestKeys(redis, opts.keyPrefix).then(() => undefined) };
    },
  },
];

let h: AiHarness | undefined;
let cleanup: (() => Promise<void>) | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  await cleanup?.();
  cleanup = undefined;
});

for (const backend of backends) {
  describe.skipIf(!backend.ok)(`response cache on ${backend.name}`, () => cacheSuite(backend));
}

async function harness(
  backend: Backend,
  cache: Record<string, unknown>,
  over: ConfigInput = {},
  reply?: (req: { content: string }) => string,
): Promise<AiHarness> {
  const opened = await backend.open();
  cleanup = opened.cleanup;
  h = await createAiHarness({ ai: { cache: { enabled: true, ...cache } as never }, ...over }, reply ? { reply } : {}, {
    storage: opened.store,
  });
  await h.credit(alice.sub, 1_000_000);
  await h.credit(bob.sub, 1_000_000);
  return h;
}
/** The cache's entries in the store (its byte counters left out). */
async function entries(): Promise<unknown[]> {
  const keys = (await h!.runtime.shared.keys('aicache:')).filter((k) => !k.startsWith('aicache:bytes:'));
  return (await h!.runtime.shared.getMany(keys)).filter((v) => v !== undefined && v !== null);
}
/** The entry is written after the answer (best effort, off the call's path): wait until `n` are stored. */
const stored = (n: number) => waitFor(async () => (await entries()).length >= n, { what: `${n} cache entries stored` });
const input = (content = 'what is 2+2?', extra: Record<string, unknown> = {}) => ({
  content,
  systemPrompt: 'be brief',
  provider: 'openai' as const,
  options: { model: 'gpt-4.1-nano', maxTokens: 30 },
  ...extra,
});
const ADMIN = { ...alice, sub: 'admin', isAdmin: true };
const chatCalls = () => h!.upstream.requests.filter((r) => r.format !== 'models').length;

function cacheSuite(backend: Backend): void {
  it('a repeat is a hit: no upstream call, same answer, charged chargeRatio of the original, recorded as a cache hit', async () => {
    await harness(backend, { chargeRatio: 0.5 });
    const b0 = await h!.balance(alice.sub);
    const miss = await h!.caller(alice).ai.generateText(input());
    expect(miss.data.cache).toBe('miss');
    const b1 = await h!.balance(alice.sub);
    expect(b0 - b1).toBe(miss.tokenUsage!.tokensCharged);
    await stored(1);
    const hit = await h!.caller(alice).ai.generateText(input());
    expect(hit.data).toMatchObject({
      cache: 'hit',
      text: miss.data.text,
      provider: 'openai',
      model: 'gpt-4.1-nano',
      usage: miss.data.usage,
    });
    expect(chatCalls()).toBe(1);
    const used = Math.ceil(miss.tokenUsage!.tokensUsed * 0.5);
    expect(hit.tokenUsage!.tokensUsed).toBe(used);
    expect(b1 - (await h!.balance(alice.sub))).toBe(hit.tokenUsage!.tokensCharged);
    const settles = (await h!.runtime.billing.ledger.entries(alice.sub)).filter((e) => e.kind === 'settle');
    expect(settles).toHaveLength(2);
    expect(JSON.stringify(settles)).toContain('"cache":"hit"');
    expect(JSON.stringify(settles)).toContain(`"cachedTokensUsed":${miss.tokenUsage!.tokensUsed}`);
    // And in the statistics: the hit counted with the usage of the answer it replayed.
    const statistics = await h!.caller(ADMIN).admin.statistics({ days: 1 });
    const row = statistics.procedures.find((p) => p.path === 'ai.generateText');
    expect(row).toMatchObject({ count: 2, cacheHits: 1, cachedTokens: miss.data.usage.totalTokens });
    expect(statistics).toMatchObject({ cacheHits: 1, cachedTokens: miss.data.usage.totalTokens });
    // Entries hold the answer only: no prompt, no system prompt.
    const held = await entries();
    expect(held).toHaveLength(1);
    expect(JSON.stringify(held)).not.toContain('what is 2+2');
    expect(JSON.stringify(held)).not.toContain('be brief');
  });

  it("default ratio 0: a hit is free; another user is never served a user's entry (scope user); per-request off and refresh", async () => {
    await harness(backend, {});
    const first = await h!.caller(alice).ai.generateText(input());
    await stored(1);
    const b = await h!.balance(alice.sub);
    const hit = await h!.caller(alice).ai.generateText(input());
    expect(hit.data.cache).toBe('hit');
    expect(hit.tokenUsage!.tokensCharged).toBe(0);
    expect(await h!.balance(alice.sub)).toBe(b);
    const other = await h!.caller(bob).ai.generateText(input());
    expect(other.data.cache).toBe('miss');
    expect(chatCalls()).toBe(2);
    const off = await h!.caller(alice).ai.generateText(input(undefined, { cache: 'off' }));
    expect(off.data.cache).toBeUndefined();
    const refresh = await h!.caller(alice).ai.generateText(input(undefined, { cache: 'refresh' }));
    expect(refresh.data.cache).toBe('miss');
    expect(chatCalls()).toBe(4);
    expect(first.data.text).toBe(hit.data.text);
  });

  it('scope global serves every caller; admin.clearCache responses empties it', async () => {
    await harness(backend, { scope: 'global' });
    await h!.caller(alice).ai.generateText(input());
    await stored(1);
    expect((await h!.caller(bob).ai.generateText(input())).data.cache).toBe('hit');
    const admin = ADMIN;
    // The console's figures: one hit of two lookups, the original call's tokens saved (ratio 0).
    const figures = await h!.caller(admin).admin.routes();
    expect(figures.routes).toEqual([]);
    expect(figures.cache).toMatchObject({ hits: 1, misses: 1, hitRate: 0.5 });
    expect(figures.cache!.tokensSaved).toBeGreaterThan(0);
    const cleared = await h!.caller(admin).admin.clearCache({ target: 'responses' });
    expect(cleared.cleared).toContain('responses');
    expect(await entries()).toEqual([]);
    expect((await h!.caller(bob).ai.generateText(input())).data.cache).toBe('miss');
  });

  it('a streamed request is replayed as a stream; a different request is a miss', async () => {
    await harness(backend, {});
    const collect = async (extra: Record<string, unknown> = {}) => {
      const events: Array<{
        type: string;
        cache?: string;
        delta?: string;
        result?: { data: { text: string; cache?: string; usage: { totalTokens: number | null } } };
      }> = [];
      for await (const e of await h!.caller(alice).ai.streamText(input('tell me a story', extra))) events.push(e as never);
      return events;
    };
    const miss = await collect();
    expect(miss[0]).toMatchObject({ type: 'start', cache: 'miss' });
    await stored(1);
    const hit = await collect();
    expect(hit[0]).toMatchObject({ type: 'start', cache: 'hit' });
    expect(
      hit
        .filter((e) => e.type === 'text')
        .map((e) => e.delta)
        .join(''),
    ).toBe(miss.at(-1)!.result!.data.text);
    expect(hit.at(-1)!.result!.data.cache).toBe('hit');
    expect(chatCalls()).toBe(1);
    const streamed = (await h!.caller(ADMIN).admin.statistics({ days: 1 })).procedures.find((p) => p.path === 'ai.streamText');
    expect(streamed).toMatchObject({ count: 2, cacheHits: 1, cachedTokens: miss.at(-1)!.result!.data.usage.totalTokens });
    // A generateText of the same request is served by the entry the stream left.
    expect((await h!.caller(alice).ai.generateText(input('tell me a story'))).data.cache).toBe('hit');
    expect(
      (await h!.caller(alice).ai.generateText(input('tell me a story', { options: { model: 'gpt-4.1-nano', maxTokens: 31 } }))).data.cache,
    ).toBe('miss');
  });

  it('entries expire after ttlSec', async () => {
    await harness(backend, { ttlSec: 2 });
    await h!.caller(alice).ai.generateText(input());
    await stored(1);
    expect((await h!.caller(alice).ai.generateText(input())).data.cache).toBe('hit');
    // Expiry is the store's own (Redis counts it on its server), so it is awaited, not clocked.
    await waitFor(async () => (await entries()).length === 0, { what: 'the entry expired', timeoutMs: 10_000, intervalMs: 100 });
    expect((await h!.caller(alice).ai.generateText(input())).data.cache).toBe('miss');
    expect(chatCalls()).toBe(2);
  });

  it('an answer larger than maxEntryBytes is not stored', async () => {
    await harness(backend, { maxEntryBytes: 512 }, {}, (req) => (req.content.includes('long') ? 'y'.repeat(600) : 'short'));
    await h!.caller(alice).ai.generateText(input('long one'));
    await h!.caller(alice).ai.generateText(input('small one'));
    await stored(1);
    expect((await h!.caller(alice).ai.generateText(input('long one'))).data.cache).toBe('miss');
    expect((await h!.caller(alice).ai.generateText(input('small one'))).data.cache).toBe('hit');
  });

  it('past maxTotalBytes answers are not stored: the call is still answered (a miss), later ones stay misses, the stored bytes stay within the limit', async () => {
    await harness(backend, { maxTotalBytes: 1024 }, {}, (req) => `${req.content}: ${'z'.repeat(300)}`);
    const questions = ['q1', 'q2', 'q3', 'q4', 'q5'];
    const refused = () => h!.logs.filter((l) => l.includes('maxTotalBytes reached')).length;
    for (const [i, q] of questions.entries()) {
      const r = await h!.caller(alice).ai.generateText(input(q));
      expect(r.data).toMatchObject({ cache: 'miss', text: `${q}: ${'z'.repeat(300)}` });
      // The entry is written (or refused) after the answer: wait for its outcome.
      await waitFor(async () => (await entries()).length + refused() > i, { what: `the entry of ${q} stored or refused` });
    }
    const stored = await entries();
    expect(refused()).toBe(questions.length - stored.length);
    // Each entry is over 300 bytes: more than three cannot fit, and at least the first one does.
    expect(stored.length).toBeGreaterThanOrEqual(1);
    expect(stored.length).toBeLessThan(questions.length);
    expect(stored.reduce((n: number, e) => n + Buffer.byteLength(JSON.stringify(e), 'utf8'), 0)).toBeLessThanOrEqual(1024);
    const again = [];
    for (const q of questions) again.push((await h!.caller(alice).ai.generateText(input(q))).data.cache);
    // The first answers were stored until the limit, the later ones were not.
    expect(again).toEqual(questions.map((_, i) => (i < stored.length ? 'hit' : 'miss')));
    expect(chatCalls()).toBe(questions.length * 2 - stored.length);
  });
}

describe('response cache: a hit only for a caller who could have been served by its target', () => {
  const ask = (who: Identity, model: string, extra: Record<string, unknown> = {}) =>
    h!.caller(who).ai.generateText({ content: 'what is 2+2?', systemPrompt: 'be brief', model, options: { maxTokens: 30 }, ...extra });

  it("an answer a fallback served is not a hit for an API key whose rules exclude that fallback's provider", async () => {
    await harness(backends[0]!, {}, { ai: { cache: { enabled: true } as never, retry: { backoffMs: 1, maxBackoffMs: 2 } } });
    const both = await keyWith(h!, alice, ['openai/*', 'anthropic/*']);
    const openaiOnly = await keyWith(h!, alice, ['openai/*']);
    h!.upstream.failProvider('openai', { kind: 'status', status: 500 });
    const first = await ask(both, 'openai/gpt-4.1-nano', { fallbacks: ['anthropic/claude-haiku-4-5'] });
    expect(first.data).toMatchObject({ provider: 'anthropic', cache: 'miss' });
    await stored(1);
    h!.upstream.failProvider('openai', undefined);
    // The same user (scope user), the same request: but this key may not use anthropic at all.
    const second = await ask(openaiOnly, 'openai/gpt-4.1-nano');
    expect(second.data).toMatchObject({ provider: 'openai', cache: 'miss' });
    // The fresh answer replaced the entry: a hit for both keys now.
    await waitFor(async () => JSON.stringify(await entries()).includes('"provider":"openai"'), { what: 'the entry replaced' });
    expect((await ask(openaiOnly, 'openai/gpt-4.1-nano')).data).toMatchObject({ provider: 'openai', cache: 'hit' });
    expect((await ask(both, 'openai/gpt-4.1-nano', { fallbacks: ['anthropic/claude-haiku-4-5'] })).data.cache).toBe('hit');
  });

  it("a route's answer from a target an API key may not use is not a hit through that key", async () => {
    await harness(
      backends[0]!,
      {},
      {
        ai: {
          cache: { enabled: true },
          retry: { backoffMs: 1, maxBackoffMs: 2 },
          routes: {
            fast: {
              strategy: 'priority',
              targets: [
                { model: 'openai/gpt-4.1-nano', priority: 0 },
                { model: 'openai/gpt-4.1-mini', priority: 1 },
              ],
            },
          },
        } as never,
      },
    );
    const nanoOnly = await keyWith(h!, alice, ['openai/gpt-4.1-nano']);
    h!.upstream.failNext({ kind: 'status', status: 429, retryAfter: 1 });
    const first = await ask(alice, 'fast');
    expect(first.data).toMatchObject({ model: 'gpt-4.1-mini', cache: 'miss' });
    await stored(1);
    await waitFor(async () => (await h!.runtime.shared.keys('airt:cool:')).length === 0, { what: 'the cooldown over', timeoutMs: 5000 });
    const second = await ask(nanoOnly, 'fast');
    expect(second.data).toMatchObject({ model: 'gpt-4.1-nano', cache: 'miss' });
    expect(chatCalls()).toBe(3);
  });
});

describe('response cache: only whole answers are stored', () => {
  it('a stream the upstream closed before its finish event (cut mid-text, no usage) is not stored: the next call is a miss, not the cut text', async () => {
    await harness(backends[0]!, {});
    const stream = async (content: string) => {
      const events: Array<{ type: string; cache?: string; result?: { data: { text: string; finishReason: string } } }> = [];
      for await (const e of await h!
        .caller(alice)
        .ai.streamText({ content, systemPrompt: 'be brief', provider: 'anthropic', options: { maxTokens: 30 } }))
        events.push(e as never);
      return events;
    };
    // Anthropic's frames without the last text delta, content_block_stop, message_delta and message_stop, the response ended cleanly.
    const cut = await stream('tell me [[upstream:truncate-clean=4]]');
    const cutData = cut.at(-1)!.result!.data;
    expect(cutData.text).not.toMatch(/\)$/);
    expect(cutData.finishReason).toBe('other');
    // A whole answer is stored (and waited for), the cut one never is.
    await stream('a whole one');
    await stored(1);
    expect(JSON.stringify(await entries())).not.toContain('"finishReason":"other"');
    const again = await stream('tell me [[upstream:truncate-clean=4]]');
    expect(again[0]).toMatchObject({ type: 'start', cache: 'miss' });
    expect(chatCalls()).toBe(3);
    expect((await stream('a whole one'))[0]).toMatchObject({ type: 'start', cache: 'hit' });
  });
});

describe('response cache: answers paid with a caller’s own key are not stored', () => {
  it("a call billing paid with the caller's stored key leaves no entry: under scope global another user is not served it (free)", async () => {
    await harness(backends[0]!, { scope: 'global' });
    // Bob pays with his own stored key: first in his consumption order.
    await h!.runtime.vault.store(bob.sub, 'google', USER_KEY);
    await h!.runtime.billing.preferences.update(bob.sub, { byokEnabled: true, consumptionOrder: ['byok'] });
    const ask = (who: Identity) => h!.caller(who).ai.generateText({ content: 'hi', systemPrompt: 's', provider: 'google' });
    const own = await ask(bob);
    expect(h!.upstream.requests.at(-1)!.apiKey).toBe(USER_KEY);
    expect(own.usageInfo).toBeDefined();
    // A platform-paid answer of another request is stored (and awaited): the BYOK one never is.
    await h!.caller(alice).ai.generateText(input());
    await stored(1);
    expect(await entries()).toHaveLength(1);
    const other = await ask(alice);
    expect(other.data.cache).toBe('miss');
    expect(other.tokenUsage!.tokensCharged).toBeGreaterThan(0);
    expect(chatCalls()).toBe(3);
  });
});

describe('response cache: the key is the normalised request', () => {
  it("the same tools with their fields (and their JSON schema's) in another order are a hit; another schema is a miss", async () => {
    await harness(backends[0]!, {});
    const tool = (properties: Record<string, unknown>) => ({ name: 'lookup', description: 'look it up', parameters: properties });
    const ask = (parameters: Record<string, unknown>, t = tool(parameters)) =>
      h!.caller(alice).ai.generateText(input('which city?', { tools: [t] }));
    const schema = { type: 'object', properties: { city: { type: 'string', description: 'the city' } }, required: ['city'] };
    expect((await ask(schema)).data.cache).toBe('miss');
    await stored(1);
    const reordered = { required: ['city'], properties: { city: { description: 'the city', type: 'string' } }, type: 'object' };
    const sameTool = { parameters: reordered, description: 'look it up', name: 'lookup' };
    expect((await ask(reordered, sameTool)).data.cache).toBe('hit');
    expect((await ask({ ...schema, required: [] })).data.cache).toBe('miss');
    expect(chatCalls()).toBe(2);
  });
});

describe('response cache: server prompts named in messages', () => {
  it('a system message naming a server prompt keys the entry by the prompt text: a changed prompt is a miss, a removed one refused', async () => {
    await harness(backends[0]!, {});
    h!.runtime.ai.systemPrompts.register('tone', 'answer in French');
    const ask = () =>
      h!.caller(alice).ai.generateText({
        messages: [
          { role: 'system', content: '@tone' },
          { role: 'user', content: 'hello there' },
        ],
        provider: 'openai',
        options: { model: 'gpt-4.1-nano', maxTokens: 30 },
      });
    expect((await ask()).data.cache).toBe('miss');
    await stored(1);
    expect((await ask()).data.cache).toBe('hit');
    h!.runtime.ai.systemPrompts.register('tone', 'answer in German');
    expect((await ask()).data.cache).toBe('miss');
    expect(chatCalls()).toBe(2);
    h!.runtime.ai.systemPrompts.unregister('tone');
    await expect(ask()).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(chatCalls()).toBe(2);
  });
});

describe('response cache: a replayed stream', () => {
  it('never splits a character: every replayed text piece is well-formed text, together the answer', async () => {
    // Emoji (two UTF-16 units each) across every piece boundary of the replay.
    const answer = `${'a'.repeat(63)}${'😀'.repeat(80)}`;
    await harness(backends[0]!, {}, {}, () => answer);
    const deltas = async () => {
      const out: string[] = [];
      for await (const e of await h!.caller(alice).ai.streamText(input('emoji please')))
        if ((e as { type: string }).type === 'text') out.push((e as { delta: string }).delta);
      return out;
    };
    expect((await deltas()).join('')).toBe(answer);
    await stored(1);
    const replayed = await deltas();
    expect(replayed.length).toBeGreaterThan(1);
    expect(replayed.join('')).toBe(answer);
    // Well-formed: it survives UTF-8 (a lone surrogate half would come back as U+FFFD).
    for (const d of replayed) expect(Buffer.from(d, 'utf8').toString('utf8')).toBe(d);
    expect(chatCalls()).toBe(1);
  });
});
