import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UpstreamFault, UsageValues } from '@ai-backend/test-utils';
import {
  createTestUpstream,
  creditTokens,
  SERVER_KEY,
  startAiServer,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { describeV1Paths } from './helpers/describeMatrix.js';
import { callV1, V1_FORMATS, v1Clients, type V1Format, type V1Outcome } from './helpers/v1Call.js';
import { fee, OUTPUT_TOKENS, settlementOf, usageOf, type Settlement } from './helpers/settlementOf.js';

/**
 * Each way reading usage from the answer can go wrong (docs/ai.md#pass-through, "Metering"), for
 * the three /v1 wire formats, streamed and plain, metered and BYOK, on both paths: a stream cut
 * (or closed early) before its usage event or after it but before its terminal event, an answer
 * without usage, and hostile usage reports (negative, fractional, huge, string, zero, a wrong
 * total, repeated usage events). The rule checked: a call whose usage can be read is charged that
 * usage, once (also a stream cut after its usage event, before its terminal event); anything else
 * that reached the caller is settled at its hold, never free, and logged without secrets. The SDK path reads usage
 * through the AI SDK, which refuses some of these answers outright: there the rule checked is
 * the invariant (one close, never free when answered, never above the hold, a balanced ledger).
 */
let upstream: TestUpstream;
let gw: AiServer;
let admin: string;
let users = 0;
const START = 100_000;
const USER_KEY = 'sk-own-caller-key-SECRET-0042';

describeV1Paths('ai-pass-through-usage', (path) => {
  beforeAll(async () => {
    upstream = await createTestUpstream({ outputTokens: OUTPUT_TOKENS });
    // A short idle timeout: a stream that stalls is ended within the test's time.
    gw = await startAiServer(upstream, { storage: { type: 'memory' }, ai: { timeoutMs: 800 } }, { path });
    admin = await tokenFor('ptu-admin', { admin: true });
  });
  afterAll(async () => {
    await gw.stop();
    await upstream.close();
  });

  /** A fresh user (one call each, so its ledger is that call's), funded, or BYOK with its own key. */
  async function caller(byok = false) {
    const sub = `ptu-${path}-${++users}`;
    if (!byok) await creditTokens(gw.url, admin, sub, START, `ptu-${sub}`);
    return { sub, clients: v1Clients(gw.url, await tokenFor(sub), byok ? { 'x-provider-api-key': USER_KEY } : {}) };
  }

  /** One call with `fault` on its upstream request; what the caller saw and how the ledger closed it. */
  async function run(format: V1Format, stream: boolean, opts: { marker?: string; fault?: UpstreamFault; byok?: boolean } = {}) {
    const u = await caller(opts.byok);
    const content = `${format} ${stream ? 'streamed' : 'plain'} ${opts.marker ?? ''}`.trim();
    upstream.reset();
    if (opts.fault) upstream.failNext(opts.fault);
    const seen = await callV1(u.clients, format, { content, stream });
    const s = await settlementOf(gw, u.sub);
    if (!opts.byok) {
      const b = await gw.runtime.billing.balances(u.sub);
      expect(b.subscription + b.one_time).toBe(START - s.charged);
    }
    return { seen, s, content, sub: u.sub };
  }

  /** The pass-through warning for this call: present, naming it, without the server's or the caller's key. */
  function warned(seen: V1Outcome) {
    const line = gw.logs.find((l) => /charging the hold|reported no usage/.test(l) && l.includes(seen.requestId!));
    expect(line, 'a warning naming the call').toBeDefined();
    // Ids, provider, model and sizes only: nothing of the prompt or the answer.
    expect(line).not.toMatch(/streamed|plain|Test reply/);
    expect(gw.logs.join('\n')).not.toContain(SERVER_KEY);
    expect(gw.logs.join('\n')).not.toContain(USER_KEY);
  }

  /** On the pass-through path: settled at the hold (platform) or recorded at the hold's tokens (BYOK). */
  function atHold(s: Settlement, seen: V1Outcome, byok = false) {
    expect(seen.path).toBe('pass-through');
    expect(s.closes).toBe(1);
    if (byok) {
      expect(s.kind).toBe('byok_usage');
      expect(s.usage!.tokensCharged).toBe(0);
    } else {
      expect(s.kind).toBe('settle');
      expect(s.held).toBeGreaterThan(0);
      expect(s.charged).toBe(s.held);
      // A plain answer says what it was charged: the hold.
      if (seen.tokensCharged !== null) expect(Number(seen.tokensCharged)).toBe(s.held);
    }
    warned(seen);
  }

  /** On the SDK path: closed once, never free when the caller got an answer, never above the hold. */
  function invariant(s: Settlement, seen: V1Outcome) {
    expect(s.closes).toBe(1);
    expect(s.charged).toBeLessThanOrEqual(s.held);
    if (!seen.failed) expect(s.charged).toBeGreaterThan(0);
  }

  // The frames each format's stream loses: `before` its usage event, `after` it but before its
  // terminal event (`[DONE]`, `message_stop`; the Responses API's usage rides on its terminal event).
  const CUT: Record<V1Format, { before: number; after?: number }> = {
    chat: { before: 2, after: 1 },
    responses: { before: 1 },
    messages: { before: 2, after: 1 },
  };

  describe('a stream the upstream cut or closed early', () => {
    for (const format of V1_FORMATS) {
      const cases: Array<[string, string]> = [
        ['cut mid-output', 'drop'],
        ['cut before its usage event', `truncate=${CUT[format].before}`],
        ['closed cleanly before its usage event', `truncate-clean=${CUT[format].before}`],
      ];
      const after = CUT[format].after;
      cases.push(['stalled before its usage event (the idle timeout ends it)', `truncate-stall=${CUT[format].before}`]);
      if (after)
        cases.push(
          ['cut after its usage event, before its terminal event', `truncate=${after}`],
          ['closed cleanly after its usage event, before its terminal event', `truncate-clean=${after}`],
          ['stalled after its usage event, before its terminal event', `truncate-stall=${after}`],
        );
      for (const [name, marker] of cases) {
        const usageWentBy = name.includes('after its usage event');
        it(`${format}: ${name}: ${usageWentBy ? 'charged the usage it reported' : 'settled at the hold, never free'}; the caller has the bytes received (an error event when cut)`, async () => {
          const { seen, s, content } = await run(format, true, { marker: `[[upstream:${marker}]]` });
          expect(seen.status).toBe(200);
          if (marker !== 'drop') expect(seen.text).toMatch(/^Test reply from/);
          if (!marker.includes('clean')) expect(seen.failed).toBe(true);
          if (path === 'sdk') invariant(s, seen);
          else if (!usageWentBy) atHold(s, seen);
          else {
            // The usage event carries the whole answer's counts: read, so charged, once, and said.
            const used = usageOf(content);
            expect(s.closes).toBe(1);
            expect(s.usage).toMatchObject({ tokensUsed: used, tokensCharged: used + fee(used) });
            expect(gw.logs.some((l) => l.includes('ended before its terminal event') && l.includes(seen.requestId!))).toBe(true);
          }
        });
      }
    }

    it('BYOK, each format: hostile usage (a negative output) is recorded at the hold’s tokens, plain and streamed', async () => {
      for (const format of V1_FORMATS)
        for (const stream of [false, true]) {
          const { seen, s } = await run(format, stream, { fault: { kind: 'usage', values: { output: -16 } }, byok: true });
          expect(s.closes).toBe(1);
          if (path === 'pass-through') {
            atHold(s, seen, true);
            expect(s.usage!.tokensUsed).toBeGreaterThan(usageOf(`${format} ${stream ? 'streamed' : 'plain'}`));
          } else if (!seen.failed) expect(s.usage!.tokensUsed).toBeGreaterThan(0);
        }
    });

    it('BYOK, each format: a cut stream is recorded at the hold’s tokens, nothing charged, the caller’s key in no log', async () => {
      for (const format of V1_FORMATS) {
        const { seen, s } = await run(format, true, { marker: `[[upstream:truncate=${CUT[format].before}]]`, byok: true });
        expect(upstream.requests.at(-1)!.apiKey).toBe(USER_KEY);
        expect(seen.failed).toBe(true);
        expect(s.kind).toBe('byok_usage');
        expect(s.closes).toBe(1);
        if (path === 'pass-through') {
          atHold(s, seen, true);
          expect(s.usage!.tokensUsed).toBeGreaterThan(usageOf(`${format} streamed`));
        }
      }
    });
  });

  describe('a failure before any byte reached the caller (no fallback configured): a clean error, released', () => {
    for (const format of V1_FORMATS)
      for (const [name, marker, stream] of [
        ['a plain answer cut mid-body', 'drop', false],
        ['a plain answer that is not JSON', 'malformed', false],
        ['plain JSON instead of an event stream', 'json', true],
        ['a stream that ends without any event', 'truncate-clean=99', true],
      ] as const)
        it(`${format}: ${name}: a 502 in the format's shape, nothing charged`, async () => {
          const { seen, s } = await run(format, stream, { marker: `[[upstream:${marker}]]` });
          expect(seen.status).toBe(502);
          expect(seen.failed).toBe(true);
          expect(seen.text).toBe('');
          expect(s).toMatchObject({ kind: 'release', charged: 0, closes: 1 });
        });
  });

  // An answer without usage: OpenAI's formats leave it out (`no-usage`); Anthropic's, always
  // reported, is emptied.
  const noUsage = (format: V1Format): { marker?: string; fault?: UpstreamFault } =>
    format === 'messages'
      ? { fault: { kind: 'usage', values: { input: undefined, output: undefined } } }
      : { marker: '[[upstream:no-usage]]' };

  describe('an answer without usage', () => {
    for (const format of V1_FORMATS)
      for (const stream of [false, true])
        it(`${format}, ${stream ? 'streamed' : 'plain'}: settled at the hold, never free, logged`, async () => {
          const { seen, s } = await run(format, stream, noUsage(format));
          if (path === 'pass-through') {
            expect(seen.failed).toBe(false);
            atHold(s, seen);
          } else invariant(s, seen);
        });

    it('BYOK, each format, plain: recorded at the hold’s tokens (the SDK path may refuse it: a 502, nothing recorded)', async () => {
      for (const format of V1_FORMATS) {
        const u = await caller(true);
        upstream.reset();
        const { marker, fault } = noUsage(format);
        if (fault) upstream.failNext(fault);
        const seen = await callV1(u.clients, format, { content: `${format} plain ${marker ?? ''}`, stream: false });
        if (path === 'sdk' && seen.failed) {
          // The AI SDK's Anthropic schema requires usage: the answer is refused, the caller paid nothing to us.
          expect(seen.status).toBe(502);
          expect(await gw.runtime.billing.ledger.entries(u.sub)).toEqual([]);
          continue;
        }
        const s = await settlementOf(gw, u.sub);
        expect(s.kind).toBe('byok_usage');
        if (path === 'pass-through') atHold(s, seen, true);
      }
    });
  });

  /** [name, the values reported, a repeated usage event (streams), what the call is charged]. */
  const HOSTILE: Array<[string, UsageValues, UsageValues | undefined, 'usage' | 'hold']> = [
    ['negative input', { input: -5 }, undefined, 'hold'],
    ['negative output', { output: -16 }, undefined, 'hold'],
    ['fractional input', { input: 2.5 }, undefined, 'hold'],
    ['fractional output', { output: 15.5 }, undefined, 'hold'],
    ['huge input (1e18)', { input: 1e18 }, undefined, 'hold'],
    ['huge output (1e9)', { output: 1e9 }, undefined, 'hold'],
    ['huge output (1e300)', { output: 1e300 }, undefined, 'hold'],
    ['output above 2^53', { output: 2 ** 53 + 2 }, undefined, 'hold'],
    ['string input', { input: '12' }, undefined, 'hold'],
    ['string output', { output: '16' }, undefined, 'hold'],
    ['null output', { output: null }, undefined, 'hold'],
    ['all zero', { input: 0, output: 0, total: 0 }, undefined, 'hold'],
    ['zero total beside real counts', { total: 0 }, undefined, 'usage'],
    ['a total below its parts', { total: 1 }, undefined, 'usage'],
    ['a string total', { total: 'many' }, undefined, 'usage'],
    ['the usage event twice', {}, {}, 'usage'],
    ['a second, smaller usage event', {}, { input: 1, output: 1, total: 2 }, 'usage'],
    ['a second usage event of zeros', {}, { input: 0, output: 0, total: 0 }, 'usage'],
    ['a second usage event with a negative count', {}, { output: -1 }, 'hold'],
    ['a second usage event with a string count', {}, { input: '1' }, 'hold'],
  ];

  describe('hostile usage reports: never below the hold-or-usage rule, never a crash', () => {
    for (const format of V1_FORMATS)
      for (const [name, values, again, want] of HOSTILE)
        it(`${format}: ${name}: charged ${want === 'hold' ? 'the hold' : 'the usage, once'}`, async () => {
          for (const stream of again ? [true] : [false, true]) {
            const { seen, s, content } = await run(format, stream, { fault: { kind: 'usage', values, ...(again ? { again } : {}) } });
            // Whatever the usage chunk said, a caller who did not ask for it does not get it.
            if (format === 'chat' && stream) expect(seen.events.some((e) => (e as { usage?: unknown }).usage)).toBe(false);
            if (path === 'sdk') {
              invariant(s, seen);
              // Repeated usage events never lower the charge below the largest they reported (RawStreamUsage).
              if (again && !seen.failed) expect(s.usage!.tokensUsed).toBeGreaterThanOrEqual(usageOf(content));
              continue;
            }
            expect(seen.status).toBe(200);
            expect(seen.failed).toBe(false);
            if (want === 'hold') atHold(s, seen);
            else {
              const used = usageOf(content);
              expect(s.usage).toMatchObject({ tokensUsed: used, tokensCharged: used + fee(used) });
              expect(s.closes).toBe(1);
            }
          }
        });
  });
});
