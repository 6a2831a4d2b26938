import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  createTestUpstream,
  creditTokens,
  rpcCall,
  startAiServer,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { describeV1Paths } from './helpers/describeMatrix.js';

/**
 * Input a provider read from its prompt cache is billed below the input price: OpenAI's
 * `cached_tokens` (Chat Completions and Responses), Google's `cachedContentTokenCount`, OpenRouter's
 * `cached_tokens`, Anthropic's cache reads. A call is recorded (and spends money budgets) at the
 * model's `cachedInputRatio` of the input price for them, on both /v1 paths, streamed and not; a
 * model without one prices them as input. Before, only Anthropic's reads on the pass-through path
 * were priced so: a caller who hit OpenAI's or Google's cache was recorded at up to ten times the
 * bill. The test upstream reports 1,500 of 2,000 input tokens as cached (`[[upstream:cached=…]]`).
 */
const INPUT = 2_000;
const CACHED = 1_500;
const OUTPUT = 16;

interface Priced {
  inputUsdPerMTok: number;
  outputUsdPerMTok: number;
  cachedInputRatio?: number;
}
const registry = JSON.parse(readFileSync(new URL('../../packages/core/src/services/ai/models.json', import.meta.url), 'utf8')) as {
  providers: Record<string, { models: Record<string, Priced> }>;
};
/** An operator's model with prices but no cached-input price. */
const PLAIN: Priced = { inputUsdPerMTok: 1, outputUsdPerMTok: 2 };

/** What the registry says such a call costs: cached input at the ratio (none: at the input price). */
function expectedUsd(m: Priced): number {
  const ratio = m.cachedInputRatio ?? 1;
  return ((INPUT - CACHED) * m.inputUsdPerMTok + CACHED * m.inputUsdPerMTok * ratio + OUTPUT * m.outputUsdPerMTok) / 1_000_000;
}
const priceOf = (provider: string, model: string): Priced => registry.providers[provider]!.models[model]!;

/** One model per provider that reports cached input, as /v1 names it, and its registry entry. */
const CHAT: Array<[string, Priced]> = [
  ['openai/gpt-5', priceOf('openai', 'gpt-5')],
  ['openrouter/openai/gpt-5', priceOf('openrouter', 'openai/gpt-5')],
  ['google/gemini-2.5-flash', priceOf('google', 'gemini-2.5-flash')],
  ['anthropic/claude-haiku-4-5', priceOf('anthropic', 'claude-haiku-4-5')],
  ['openai/my-plain', PLAIN],
];
const RESPONSES: Array<[string, Priced]> = [
  ['openai/gpt-4.1', priceOf('openai', 'gpt-4.1')],
  ['openai/my-plain', PLAIN],
];

describeV1Paths('cached input priced at the model’s cached-input price', (path) => {
  let upstream: TestUpstream;
  let gw: AiServer;
  let caching: AiServer;
  let admin: string;
  let users = 0;

  beforeAll(async () => {
    upstream = await createTestUpstream({ countInputTokens: () => INPUT, outputTokens: OUTPUT });
    gw = await startAiServer(upstream, { admin: { users: ['cip-admin'] }, ai: { models: { openai: { 'my-plain': PLAIN } } } }, { path });
    // The same with the response cache on (a streamed call that may be stored takes the SDK path: a server of its own).
    caching = await startAiServer(
      upstream,
      { admin: { users: ['cip-admin'] }, ai: { cache: { enabled: true, chargeRatio: 0.5 } } },
      { path },
    );
    admin = await tokenFor('cip-admin', { admin: true });
  });
  afterAll(async () => {
    await gw?.stop();
    await caching?.stop();
    await upstream?.close();
  });

  async function client(at = gw): Promise<{ token: string; openai: OpenAI }> {
    const sub = `cip-${path}-${++users}`;
    await creditTokens(at.url, admin, sub, 1_000_000, `cip-${sub}`);
    const token = await tokenFor(sub);
    return { token, openai: new OpenAI({ baseURL: `${at.url}/v1`, apiKey: token, maxRetries: 0 }) };
  }

  /** The call's ledger record: what it cost, and the tokens charged (every input token, cached ones too). */
  async function recorded(token: string, at = gw): Promise<{ estimatedCostUsd: number; tokensUsed: number }> {
    const history = await rpcCall(at.url, token, 'billing.getUsageHistory', { limit: 1 });
    expect(history.result, history.text).toBeDefined();
    return history.result.usage[0];
  }

  for (const stream of [false, true])
    for (const [model, price] of CHAT)
      it(`chat completions${stream ? ', streamed' : ''}: ${model}`, async () => {
        const u = await client();
        const ask = { model, max_tokens: 64, messages: [{ role: 'user' as const, content: `hi [[upstream:cached=${CACHED}]]` }] };
        let text = '';
        if (stream)
          for await (const chunk of await u.openai.chat.completions.create({ ...ask, stream: true }))
            text += chunk.choices[0]?.delta.content ?? '';
        else text = (await u.openai.chat.completions.create(ask)).choices[0]!.message.content ?? '';
        expect(text).toMatch(/^Test reply from/);
        const r = await recorded(u.token);
        expect(r.estimatedCostUsd).toBeCloseTo(expectedUsd(price), 12);
        expect(r.tokensUsed).toBe(INPUT + OUTPUT);
      });

  for (const stream of [false, true])
    for (const [model, price] of RESPONSES)
      it(`responses${stream ? ', streamed' : ''}: ${model}`, async () => {
        const u = await client();
        const ask = { model, max_output_tokens: 64, input: `hi [[upstream:cached=${CACHED}]]` };
        const r = stream ? await u.openai.responses.stream(ask).finalResponse() : await u.openai.responses.create(ask);
        expect(r.output_text).toMatch(/^Test reply from/);
        const rec = await recorded(u.token);
        expect(rec.estimatedCostUsd).toBeCloseTo(expectedUsd(price), 12);
        expect(rec.tokensUsed).toBe(INPUT + OUTPUT);
      });

  it('a response-cache hit is charged its ratio of the price the miss was recorded at (cached input priced), streamed and not', async () => {
    const [model, price] = CHAT[0]!;
    for (const stream of [false, true]) {
      const u = await client(caching);
      const ask = {
        model,
        max_tokens: 64,
        messages: [{ role: 'user' as const, content: `again ${stream} [[upstream:cached=${CACHED}]]` }],
      };
      for (const expected of ['miss', 'hit']) {
        let text = '';
        let response: Response;
        if (stream) {
          const r = await u.openai.chat.completions.create({ ...ask, stream: true }).withResponse();
          for await (const chunk of r.data) text += chunk.choices[0]?.delta.content ?? '';
          response = r.response;
        } else {
          const r = await u.openai.chat.completions.create(ask).withResponse();
          text = r.data.choices[0]!.message.content ?? '';
          response = r.response;
        }
        expect(text).toMatch(/^Test reply from/);
        expect(response.headers.get('x-ai-backend-cache')).toBe(expected);
      }
      const history = await rpcCall(caching.url, u.token, 'billing.getUsageHistory', { limit: 2 });
      const [hit, miss] = history.result.usage as Array<{ estimatedCostUsd: number }>;
      expect(miss!.estimatedCostUsd).toBeCloseTo(expectedUsd(price), 12);
      expect(hit!.estimatedCostUsd).toBeCloseTo(expectedUsd(price) * 0.5, 12);
    }
  });
});
