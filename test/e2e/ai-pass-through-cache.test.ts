import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UpstreamFault } from '@ai-backend/test-utils';
import {
  createTestUpstream,
  creditTokens,
  startAiServer,
  tokenFor,
  waitFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { describeV1Paths, type V1Path } from './helpers/describeMatrix.js';
import { callV1, V1_FORMATS, v1Clients, type V1Clients, type V1Format, type V1Outcome } from './helpers/v1Call.js';
import { fee, OUTPUT_TOKENS, usageOf } from './helpers/settlementOf.js';

/**
 * The response cache on /v1 (docs/ai.md "Response cache") for the three wire formats, on both
 * paths: a miss (passed through on the fast path when plain) is stored, and a repeat is served from
 * the cache, plain or streamed, in the caller's format, without an upstream request, charged
 * `chargeRatio` (here 0.5) of what the miss was charged: its usage, or its hold when its usage could
 * not be read, under the provider and model that served it (a fallback's too). A BYOK call is never
 * cached.
 */
const RATIO = 0.5;
const START = 100_000;

let upstream: TestUpstream;
let gw: AiServer;
let admin: string;
let users = 0;

describeV1Paths('ai-pass-through-cache', (path: V1Path) => {
  beforeAll(async () => {
    upstream = await createTestUpstream({ outputTokens: OUTPUT_TOKENS });
    gw = await startAiServer(
      upstream,
      {
        storage: { type: 'memory' },
        ai: {
          cache: { enabled: true, chargeRatio: RATIO },
          fallbacks: ['openai/gpt-4.1'],
          retry: { backoffMs: 5, maxBackoffMs: 20 },
          circuitBreaker: { failureThreshold: 1000 },
        },
      },
      { path },
    );
    admin = await tokenFor('ptc-admin', { admin: true });
  });
  afterAll(async () => {
    await gw.stop();
    await upstream.close();
  });

  async function caller(byok = false): Promise<{ sub: string; clients: V1Clients }> {
    const sub = `ptc-${path}-${++users}`;
    if (!byok) await creditTokens(gw.url, admin, sub, START, `ptc-${sub}`);
    return { sub, clients: v1Clients(gw.url, await tokenFor(sub), byok ? { 'x-provider-api-key': 'sk-own-cache-key' } : {}) };
  }
  const generations = () => upstream.requests.filter((r) => r.format !== 'models').length;

  /** Ask until the cache serves (the entry is stored as the miss is answered); each further miss went upstream. */
  async function untilHit(ask: () => Promise<V1Outcome>): Promise<V1Outcome> {
    return waitFor(
      async () => {
        const o = await ask();
        return o.cache === 'hit' ? o : undefined;
      },
      { what: 'a cache hit' },
    );
  }

  /** The settles of `sub`, in order, with the ledger consistent and the balance what they charged. */
  async function settles(sub: string, count: number) {
    const all = await waitFor(
      async () => {
        const s = (await gw.runtime.billing.ledger.entries(sub)).filter((e) => e.kind === 'settle');
        return s.length >= count ? s : undefined;
      },
      { what: `${count} settles of ${sub}` },
    );
    expect(all).toHaveLength(count);
    expect((await gw.runtime.billing.ledger.audit(sub)).consistent).toBe(true);
    const b = await gw.runtime.billing.balances(sub);
    expect(b.subscription + b.one_time).toBe(START - all.reduce((sum, e) => sum + e.usage!.tokensCharged, 0));
    return all.map((e) => e.usage!);
  }

  /**
   * Miss (`first`, with `fault` on its upstream request), then hits until one is served, then the
   * same request the other way (plain or streamed): both hits carry the miss's text, each charged
   * `chargeRatio` of what the miss was. On the pass-through path a plain call after a streamed miss
   * misses once (docs/ai.md#response-cache: its answer is the provider's body).
   */
  async function missThenHits(format: V1Format, first: { stream: boolean; marker?: string; fault?: UpstreamFault }) {
    const u = await caller();
    const content = `cache ${format} ${first.stream ? 'streamed' : 'plain'} ${first.marker ?? ''}`.trim();
    upstream.reset();
    if (first.fault) upstream.failNext(first.fault);
    const miss = await callV1(u.clients, format, { content, stream: first.stream });
    expect(miss.status).toBe(200);
    expect(miss.cache).toBe('miss');
    let misses = 1;
    const hit = await untilHit(async () => {
      const o = await callV1(u.clients, format, { content, stream: first.stream });
      if (o.cache === 'miss') misses++;
      return o;
    });
    const before = generations();
    let other = await callV1(u.clients, format, { content, stream: !first.stream });
    /** The miss the `other` hit replays. */
    let otherMiss = miss;
    if (path === 'pass-through' && first.stream) {
      // A plain call here is answered with the provider's own body, which an entry a stream stored
      // (in our encoding) does not hold: a miss, passed through and stored, then hits.
      expect(other).toMatchObject({ cache: 'miss', path: 'pass-through' });
      expect(generations()).toBe(before + 1);
      misses++;
      otherMiss = other;
      other = await untilHit(async () => {
        const o = await callV1(u.clients, format, { content, stream: false });
        if (o.cache === 'miss') misses++;
        return o;
      });
      expect(other.path).toBe('pass-through');
    } else {
      expect(other.cache).toBe('hit');
      expect(generations()).toBe(before);
    }
    for (const [h, m] of [
      [hit, miss],
      [other, otherMiss],
    ] as const) {
      expect(h.status).toBe(200);
      expect(h.failed).toBe(false);
      expect(h.text).toBe(m.text);
    }
    const s = await settles(u.sub, misses + 2);
    // The first miss stored the entry the hits were served from (a later miss, before it landed, would store the same answer).
    const stored = s[0]!;
    const isHit = (e: (typeof s)[number]) => (e.metadata as { cache?: string } | undefined)?.cache === 'hit';
    const hits = s.filter(isHit);
    expect(hits).toHaveLength(2);
    for (const h of hits) {
      expect(h).toMatchObject({ provider: stored.provider, model: stored.model });
      const cached = (h.metadata as { cachedTokensUsed: number }).cachedTokensUsed;
      expect(s.filter((e) => !isHit(e)).map((m) => m.tokensUsed)).toContain(cached);
      expect(h.tokensUsed).toBe(Math.ceil(cached * RATIO));
      expect(h.tokensCharged).toBe(h.tokensUsed + fee(h.tokensUsed));
    }
    return { content, miss, stored };
  }

  describe('a repeat is served from the cache, plain and streamed, charged its ratio of the miss', () => {
    for (const format of V1_FORMATS) {
      it(`${format}: a plain miss (passed through on the fast path), then hits`, async () => {
        const { content, miss, stored } = await missThenHits(format, { stream: false });
        if (path === 'pass-through') expect(miss.path).toBe('pass-through');
        expect(stored.tokensUsed).toBe(usageOf(content));
      });

      it(`${format}: a streamed miss, then hits`, async () => {
        const { content, stored } = await missThenHits(format, { stream: true });
        expect(stored.tokensUsed).toBe(usageOf(content));
      });

      it(`${format}: a miss whose usage could not be read was charged its hold; a hit, its ratio of that`, async () => {
        const { content, stored } = await missThenHits(format, { stream: false, fault: { kind: 'usage', values: { output: -1 } } });
        expect(stored.tokensUsed).toBeGreaterThan(usageOf(content));
      });

      it(`${format}: a miss a fallback served (after a 503); a hit records that provider and model`, async () => {
        const { stored } = await missThenHits(format, { stream: false, fault: { kind: 'status', status: 503 } });
        expect(stored).toMatchObject({ provider: 'openai', model: 'gpt-4.1' });
      });
    }

    it('BYOK calls are never cached, each format', async () => {
      for (const format of V1_FORMATS) {
        const u = await caller(true);
        upstream.reset();
        for (let i = 0; i < 2; i++) {
          const o = await callV1(u.clients, format, { content: `byok cache ${format}`, stream: false });
          expect(o.status).toBe(200);
          expect(o.cache).toBeNull();
        }
        expect(generations()).toBe(2);
      }
    });
  });
});
