import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import {
  createTestUpstream,
  creditTokens,
  SERVER_KEY,
  startAiServer,
  tokenFor,
  waitFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';

/**
 * The /v1 pass-through path (docs/ai.md#pass-through) with the official clients against a real
 * server: that it is taken (the caller's own fields reach the upstream untouched, the answer is
 * the upstream's, a header says so), and that each way it could go wrong is caught: a stream cut
 * before its usage event by the upstream and an answer without usage are settled at the hold (never
 * free) and logged, a stream the client leaves early is charged what it was sent, a fallback after an upstream error is charged once for
 * the target that answered, a
 * cache hit is served from the cache at its charge ratio.
 */
let upstream: TestUpstream;
let gw: AiServer;
let cached: AiServer;
let admin: string;
let users = 0;

beforeAll(async () => {
  upstream = await createTestUpstream({ outputTokens: 16 });
  gw = await startAiServer(upstream, { storage: { type: 'memory' } });
  cached = await startAiServer(upstream, { storage: { type: 'memory' }, ai: { cache: { enabled: true, chargeRatio: 0.5 } } });
  admin = await tokenFor('pt-admin', { admin: true });
});
afterAll(async () => {
  await gw?.stop();
  await cached?.stop();
  await upstream?.close();
});

async function funded(server: AiServer = gw) {
  const sub = `pt-user-${++users}`;
  await creditTokens(server.url, admin, sub, 100_000, `pt-${sub}`);
  const token = await tokenFor(sub);
  return {
    sub,
    openai: new OpenAI({ baseURL: server.url + '/v1', apiKey: token, maxRetries: 0 }),
    anthropic: new Anthropic({ baseURL: server.url, authToken: token, apiKey: null, maxRetries: 0 }),
  };
}
const fee = (n: number) => Math.ceil(n * 0.1);
const inputOf = (text: string) => Math.ceil(text.length / 4);

/** The ledger of one call: its hold (tokens reserved, fee included) and its one settlement. */
async function ledgerOf(server: AiServer, sub: string, requestId: string) {
  const entries = await waitFor(
    async () => {
      const all = (await server.runtime.billing.ledger.entries(sub)).filter((e) => e.requestId === requestId);
      return all.some((e) => e.kind === 'settle' || e.kind === 'release') ? all : undefined;
    },
    { what: `the settlement of ${requestId}` },
  );
  const held = -entries
    .filter((e) => e.kind === 'reserve')
    .flatMap((e) => e.lines)
    .reduce((sum, l) => sum + l.delta, 0);
  const settles = entries.filter((e) => e.kind === 'settle');
  return { held, settles };
}

describe('the pass-through path is taken', () => {
  it('chat completions: the caller’s own fields reach the upstream untouched, the model is rewritten, our fields removed, metered exactly', async () => {
    const u = await funded();
    upstream.reset();
    const content = 'pass me through';
    const { data, response } = await u.openai.chat.completions
      .create({
        model: 'openai/gpt-4.1-mini',
        messages: [{ role: 'user', content }],
        seed: 7,
        top_p: 0.5,
        logit_bias: { '50256': -100 },
        ...({ models: ['openrouter/openai/gpt-5-mini'], vendor_extension: { keep: true } } as object),
      })
      .withResponse();
    expect(response.headers.get('x-ai-backend-path')).toBe('pass-through');
    const requestId = response.headers.get('x-ai-backend-request-id')!;
    expect(response.headers.get('x-ai-backend-model')).toBe('openai/gpt-4.1-mini');
    const sent = upstream.requests.at(-1)!;
    expect(sent.body).toMatchObject({
      model: 'gpt-4.1-mini',
      seed: 7,
      top_p: 0.5,
      logit_bias: { '50256': -100 },
      vendor_extension: { keep: true },
      max_completion_tokens: gw.runtime.config.ai.defaultMaxTokens,
    });
    expect(sent.body).not.toHaveProperty('models');
    expect(sent.apiKey).toBe(SERVER_KEY);
    // The answer is the upstream's own: no ai_backend field, its model id.
    expect(data).not.toHaveProperty('ai_backend');
    expect(data.model).toBe('gpt-4.1-mini');
    const used = inputOf(content) + 16;
    expect(data.usage).toMatchObject({ prompt_tokens: used - 16, completion_tokens: 16 });
    // The answer goes out after its settle landed (docs/ai.md#pass-through, "When the answer goes
    // out"): the ledger has the settle the moment the client has the answer, and the header says it.
    expect(response.headers.get('x-ai-backend-tokens-charged')).toBe(String(used + fee(used)));
    const atAnswer = (await gw.runtime.billing.ledger.entries(u.sub)).filter((e) => e.requestId === requestId);
    expect(atAnswer.map((e) => e.kind)).toContain('settle');
    const { settles } = await ledgerOf(gw, u.sub, requestId);
    expect(settles).toHaveLength(1);
    expect(settles[0]!.usage).toMatchObject({ tokensUsed: used, tokensCharged: used + fee(used), provider: 'openai' });
  });

  it('a chat stream: include_usage is asked for upstream and its chunk kept from a caller who did not ask; a caller who asked gets it', async () => {
    const u = await funded();
    upstream.reset();
    const read = async (includeUsage: boolean) => {
      const { data: stream, response } = await u.openai.chat.completions
        .create({
          model: 'openrouter/openai/gpt-5-mini',
          messages: [{ role: 'user', content: 'stream me' }],
          stream: true,
          ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
        })
        .withResponse();
      const chunks = [];
      for await (const c of stream) chunks.push(c);
      return { chunks, response };
    };
    const plain = await read(false);
    expect(plain.response.headers.get('x-ai-backend-path')).toBe('pass-through');
    expect(upstream.requests.at(-1)!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(plain.chunks.some((c) => c.choices.length === 0)).toBe(false);
    expect(plain.chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toMatch(/^Test reply from/);
    const used = inputOf('stream me') + 16;
    const { settles } = await ledgerOf(gw, u.sub, plain.response.headers.get('x-ai-backend-request-id')!);
    expect(settles[0]!.usage).toMatchObject({ tokensUsed: used, provider: 'openrouter' });

    const asked = await read(true);
    expect(asked.chunks.at(-1)!.usage).toMatchObject({ prompt_tokens: used - 16, completion_tokens: 16, total_tokens: used });
  });

  it('anthropic messages: its own fields (top_k, cache_control) reach Anthropic; streamed too, metered from message_start/message_delta', async () => {
    const u = await funded();
    upstream.reset();
    const { data, response } = await u.anthropic.messages
      .create({
        model: 'claude-sonnet-4-5',
        max_tokens: 64,
        ...({ top_k: 5 } as object),
        messages: [{ role: 'user', content: [{ type: 'text', text: 'to anthropic', cache_control: { type: 'ephemeral' } }] }],
      })
      .withResponse();
    expect(response.headers.get('x-ai-backend-path')).toBe('pass-through');
    const sent = upstream.requests.at(-1)!;
    expect(sent.provider).toBe('anthropic');
    expect(sent.body).toMatchObject({ model: 'claude-sonnet-4-5', top_k: 5, max_tokens: 64 });
    expect(JSON.stringify(sent.body)).toContain('cache_control');
    // No anthropic-beta asked for, none sent.
    expect(sent.headers['anthropic-beta']).toBeUndefined();

    // anthropic-beta (allow-listed) reaches Anthropic as sent; a value that is not a list of names does not.
    await u.anthropic.messages.create(
      { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'beta' }] },
      { headers: { 'anthropic-beta': 'prompt-caching-2024-07-31, token-efficient-tools-2025-02-19' } },
    );
    expect(upstream.requests.at(-1)!.headers['anthropic-beta']).toBe('prompt-caching-2024-07-31, token-efficient-tools-2025-02-19');
    await u.anthropic.messages.create(
      { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'beta' }] },
      { headers: { 'anthropic-beta': 'x-api-key: sk-other' } },
    );
    expect(upstream.requests.at(-1)!.headers['anthropic-beta']).toBeUndefined();
    expect(upstream.requests.at(-1)!.apiKey).toBe(SERVER_KEY);
    expect(data.content[0]).toMatchObject({ type: 'text' });
    const used = inputOf('to anthropic') + 16;
    const one = await ledgerOf(gw, u.sub, response.headers.get('x-ai-backend-request-id')!);
    expect(one.settles[0]!.usage).toMatchObject({ tokensUsed: used, provider: 'anthropic' });

    const stream = u.anthropic.messages.stream({
      model: 'claude-sonnet-4-5',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'to anthropic' }],
    });
    const final = await stream.finalMessage();
    expect(final.usage).toMatchObject({ output_tokens: 16 });
    const settles = (await gw.runtime.billing.ledger.entries(u.sub)).filter((e) => e.kind === 'settle');
    const beta = inputOf('beta') + 16;
    expect(settles.map((e) => e.usage!.tokensUsed)).toEqual([used, beta, beta, used]);
  });
  it('responses: the caller’s own fields reach OpenAI, background removed, max_output_tokens written; create and stream through the openai client, metered exactly', async () => {
    const u = await funded();
    upstream.reset();
    const input = 'respond through';
    const { data, response } = await u.openai.responses
      .create({
        model: 'openai/gpt-4.1-mini',
        input,
        top_p: 0.5,
        include: ['message.output_text.logprobs'],
        metadata: { mine: 'yes' },
        background: true,
      })
      .withResponse();
    expect(response.headers.get('x-ai-backend-path')).toBe('pass-through');
    expect(response.headers.get('x-ai-backend-model')).toBe('openai/gpt-4.1-mini');
    const sent = upstream.requests.at(-1)!;
    expect(sent).toMatchObject({ provider: 'openai', format: 'openai-responses' });
    expect(sent.body).toMatchObject({
      model: 'gpt-4.1-mini',
      top_p: 0.5,
      include: ['message.output_text.logprobs'],
      metadata: { mine: 'yes' },
      max_output_tokens: gw.runtime.config.ai.defaultMaxTokens,
    });
    expect(sent.body).not.toHaveProperty('background');
    expect(data).not.toHaveProperty('ai_backend');
    expect(data.output_text).toMatch(/^Test reply from/);
    const used = inputOf(input) + 16;
    expect(data.usage).toMatchObject({ input_tokens: used - 16, output_tokens: 16, total_tokens: used });
    const one = await ledgerOf(gw, u.sub, response.headers.get('x-ai-backend-request-id')!);
    expect(one.settles).toHaveLength(1);
    expect(one.settles[0]!.usage).toMatchObject({ tokensUsed: used, tokensCharged: used + fee(used), provider: 'openai' });

    // responses.stream rebuilds the response from the events (the openai package's accumulator): the upstream's own, passed on.
    const stream = u.openai.responses.stream({ model: 'openai/gpt-4.1-mini', input, max_output_tokens: 64 });
    let text = '';
    stream.on('response.output_text.delta', (e) => (text += e.delta));
    const final = await stream.finalResponse();
    expect(text).toMatch(/^Test reply from/);
    expect(final.output_text).toBe(text);
    expect(final.usage).toMatchObject({ output_tokens: 16, total_tokens: used });
    expect(upstream.requests.at(-1)!.body).toMatchObject({ stream: true, max_output_tokens: 64 });
    const settles = (await gw.runtime.billing.ledger.entries(u.sub)).filter((e) => e.kind === 'settle');
    expect(settles.map((e) => e.usage!.tokensUsed)).toEqual([used, used]);
  });
});

describe('each way the pass-through could be wrong is caught', () => {
  it('a stream cut before its usage event is settled at its hold (never free), and logged without secrets', async () => {
    const u = await funded();
    const { data: stream, response } = await u.openai.chat.completions
      .create({
        model: 'openai/gpt-4.1-mini',
        messages: [{ role: 'user', content: 'cut me [[upstream:drop]]' }],
        max_tokens: 50,
        stream: true,
      })
      .withResponse();
    expect(response.headers.get('x-ai-backend-path')).toBe('pass-through');
    await (async () => {
      for await (const _ of stream);
    })().catch(() => undefined);
    const { held, settles } = await ledgerOf(gw, u.sub, response.headers.get('x-ai-backend-request-id')!);
    expect(settles).toHaveLength(1);
    expect(held).toBeGreaterThan(0);
    expect(settles[0]!.usage!.tokensCharged).toBe(held);
    const warning = gw.logs.find(
      (l) => l.includes('pass-through stream gave no usage') && l.includes(response.headers.get('x-ai-backend-request-id')!),
    );
    expect(warning).toBeDefined();
    expect(gw.logs.join('\n')).not.toContain(SERVER_KEY);
  });

  it('a stream the client leaves early is charged its input and the output forwarded so far, less than the hold, never free', async () => {
    const u = await funded();
    // A long prompt: the hold's input estimate (at least its bytes) is far above the input Anthropic reports (a quarter).
    const prompt = `${'word '.repeat(200)}[[upstream:chunk-delay=40]]`;
    const bytes = Buffer.byteLength(prompt);

    const chat = await u.openai.chat.completions
      .create({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: prompt }], max_tokens: 200, stream: true })
      .withResponse();
    expect(chat.response.headers.get('x-ai-backend-path')).toBe('pass-through');
    let chatText = '';
    for await (const chunk of chat.data) {
      chatText += chunk.choices[0]?.delta?.content ?? '';
      if (chatText) {
        chat.data.controller.abort();
        break;
      }
    }
    const chatId = chat.response.headers.get('x-ai-backend-request-id')!;
    const a = await ledgerOf(gw, u.sub, chatId);
    expect(a.settles).toHaveLength(1);
    const chatUsed = a.settles[0]!.usage!.tokensUsed;
    // No usage event came: the input is the hold's estimate (at least the prompt's bytes), the output what was forwarded.
    expect(chatUsed).toBeGreaterThanOrEqual(bytes + Buffer.byteLength(chatText));
    expect(a.settles[0]!.usage!.tokensCharged).toBeLessThan(a.held);

    const msg = await u.anthropic.messages
      .create({ model: 'claude-sonnet-4-5', max_tokens: 200, messages: [{ role: 'user', content: prompt }], stream: true })
      .withResponse();
    expect(msg.response.headers.get('x-ai-backend-path')).toBe('pass-through');
    let msgText = '';
    for await (const event of msg.data) {
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') msgText += event.delta.text;
      if (msgText) {
        msg.data.controller.abort();
        break;
      }
    }
    const msgId = msg.response.headers.get('x-ai-backend-request-id')!;
    const b = await ledgerOf(gw, u.sub, msgId);
    expect(b.settles).toHaveLength(1);
    const msgUsed = b.settles[0]!.usage!.tokensUsed;
    // message_start reported the input: that count, not the estimate, plus the output forwarded.
    expect(msgUsed).toBeGreaterThanOrEqual(inputOf(prompt) + Buffer.byteLength(msgText));
    expect(msgUsed).toBeLessThan(bytes);
    expect(b.settles[0]!.usage!.tokensCharged).toBeLessThan(b.held);
    // Neither was taken for a stream without usage (that rule is for a stream the upstream cut).
    expect(gw.logs.some((l) => l.includes('gave no usage') && (l.includes(chatId) || l.includes(msgId)))).toBe(false);
  });

  it('a Responses stream: cut by the upstream before response.completed, at its hold; left by the client, its input and output so far', async () => {
    const u = await funded();
    const cut = await u.openai.responses
      .create({ model: 'openai/gpt-4.1-mini', input: 'cut me [[upstream:drop]]', max_output_tokens: 50, stream: true })
      .withResponse();
    expect(cut.response.headers.get('x-ai-backend-path')).toBe('pass-through');
    const events: { type: string; sequence_number: number }[] = [];
    for await (const e of cut.data) events.push(e);
    // The error event we add continues the upstream's numbering.
    expect(events.at(-1)).toMatchObject({ type: 'error', message: expect.stringMatching(/lost/) });
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const a = await ledgerOf(gw, u.sub, cut.response.headers.get('x-ai-backend-request-id')!);
    expect(a.settles).toHaveLength(1);
    expect(a.settles[0]!.usage!.tokensCharged).toBe(a.held);

    const prompt = `${'word '.repeat(200)}[[upstream:chunk-delay=40]]`;
    const left = await u.openai.responses
      .create({ model: 'openai/gpt-4.1-mini', input: prompt, max_output_tokens: 200, stream: true })
      .withResponse();
    let text = '';
    for await (const e of left.data) {
      if (e.type === 'response.output_text.delta') text += e.delta;
      if (text) {
        left.data.controller.abort();
        break;
      }
    }
    const b = await ledgerOf(gw, u.sub, left.response.headers.get('x-ai-backend-request-id')!);
    expect(b.settles).toHaveLength(1);
    expect(b.settles[0]!.usage!.tokensUsed).toBeGreaterThanOrEqual(Buffer.byteLength(prompt) + Buffer.byteLength(text));
    expect(b.settles[0]!.usage!.tokensCharged).toBeLessThan(b.held);
  });

  it('an answer without usage is settled at its hold, plain and streamed', async () => {
    const u = await funded();
    const plain = await u.openai.chat.completions
      .create({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'no usage [[upstream:no-usage]]' }], max_tokens: 40 })
      .withResponse();
    expect(plain.response.headers.get('x-ai-backend-path')).toBe('pass-through');
    const a = await ledgerOf(gw, u.sub, plain.response.headers.get('x-ai-backend-request-id')!);
    expect(a.settles[0]!.usage!.tokensCharged).toBe(a.held);

    const { data: stream, response } = await u.openai.chat.completions
      .create({
        model: 'openai/gpt-4.1-mini',
        messages: [{ role: 'user', content: 'no usage [[upstream:no-usage]]' }],
        max_tokens: 40,
        stream: true,
      })
      .withResponse();
    expect(response.headers.get('x-ai-backend-path')).toBe('pass-through');
    for await (const _ of stream);
    const b = await ledgerOf(gw, u.sub, response.headers.get('x-ai-backend-request-id')!);
    expect(b.settles[0]!.usage!.tokensCharged).toBe(b.held);
    expect(gw.logs.some((l) => l.includes('reported no usage') || l.includes('gave no usage'))).toBe(true);
  });

  it('a fallback after an upstream 429 is charged once, for the target that answered, plain and streamed', async () => {
    const u = await funded();
    for (const streamed of [false, true]) {
      upstream.reset();
      upstream.failNext({ kind: 'status', status: 429 });
      const req = {
        model: 'openai/gpt-4.1-mini',
        messages: [{ role: 'user' as const, content: 'fall back' }],
        ...({ models: ['openrouter/openai/gpt-5-mini'] } as object),
      };
      const { response } = streamed
        ? await u.openai.chat.completions.create({ ...req, stream: true }).withResponse()
        : await u.openai.chat.completions.create(req).withResponse();
      expect(response.headers.get('x-ai-backend-path')).toBe('pass-through');
      expect(response.headers.get('x-ai-backend-model')).toBe('openrouter/openai/gpt-5-mini');
      expect(upstream.requests.map((r) => r.provider)).toEqual(['openai', 'openrouter']);
      const { settles } = await ledgerOf(gw, u.sub, response.headers.get('x-ai-backend-request-id')!);
      expect(settles).toHaveLength(1);
      expect(settles[0]!.usage).toMatchObject({ provider: 'openrouter', tokensUsed: inputOf('fall back') + 16 });
    }
  });

  it('a cache hit is served from the cache at its charge ratio; the miss was passed through and stored', async () => {
    const u = await funded(cached);
    upstream.reset();
    const ask = { model: 'openai/gpt-4.1-mini', messages: [{ role: 'user' as const, content: 'cache me through' }], max_tokens: 30 };
    const miss = await u.openai.chat.completions.create(ask).withResponse();
    expect(miss.response.headers.get('x-ai-backend-path')).toBe('pass-through');
    expect(miss.response.headers.get('x-ai-backend-cache')).toBe('miss');
    // The entry is stored as the miss is answered: ask until it serves (each further miss went upstream, a hit did not).
    let misses = 1;
    const hit = await waitFor(
      async () => {
        const r = await u.openai.chat.completions.create(ask).withResponse();
        if (r.response.headers.get('x-ai-backend-cache') === 'hit') return r;
        misses++;
        return undefined;
      },
      { what: 'a cache hit' },
    );
    expect(hit.data.choices[0]!.message.content).toBe(miss.data.choices[0]!.message.content);
    expect(upstream.requests.filter((r) => r.format !== 'models')).toHaveLength(misses);
    const used = inputOf('cache me through') + 16;
    const settles = (await cached.runtime.billing.ledger.entries(u.sub)).filter((e) => e.kind === 'settle');
    expect(settles.at(-1)!.usage).toMatchObject({ tokensUsed: Math.ceil(used * 0.5) });
    expect(settles[0]!.usage).toMatchObject({ tokensUsed: used });
    // The fast path forwards the whole body: a field the translation drops (here `stop`) changes
    // the answer, so it changes the key: a miss, sent upstream.
    const before = upstream.requests.length;
    const other = await u.openai.chat.completions.create({ ...ask, stop: ['never'] }).withResponse();
    expect(other.response.headers.get('x-ai-backend-cache')).toBe('miss');
    expect(upstream.requests.length).toBe(before + 1);
    expect(upstream.requests.at(-1)!.body).toMatchObject({ stop: ['never'] });
  });
});
