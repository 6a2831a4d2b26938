import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenRouter } from '@openrouter/ai-sdk-provider';
import { APICallError, generateText, streamText, type LanguageModel } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUpstream, type TestUpstream } from './createTestUpstream.js';

// The upstream is checked against the real AI SDK providers: if a wire format drifts from
// what the SDK parses, these fail.
let upstream: TestUpstream;
beforeAll(async () => {
  upstream = await createTestUpstream({ outputTokens: 7 });
});
afterAll(() => upstream.close());

const formats: Array<[string, (key: string) => LanguageModel, string]> = [
  ['openai responses', (key) => createOpenAI({ apiKey: key, baseURL: upstream.baseUrls.openai })('gpt-x'), '/v1/responses'],
  ['openai chat', (key) => createOpenAI({ apiKey: key, baseURL: upstream.baseUrls.openai }).chat('gpt-x'), '/v1/chat/completions'],
  ['anthropic', (key) => createAnthropic({ apiKey: key, baseURL: upstream.baseUrls.anthropic })('claude-x'), '/v1/messages'],
  [
    'google',
    (key) => createGoogleGenerativeAI({ apiKey: key, baseURL: upstream.baseUrls.google })('gemini-x'),
    '/v1beta/models/gemini-x:generateContent',
  ],
  [
    'openrouter',
    (key) => createOpenRouter({ apiKey: key, baseURL: upstream.baseUrls.openrouter })('openai/gpt-x'),
    '/api/v1/chat/completions',
  ],
];

describe('createTestUpstream wire formats', () => {
  for (const [name, makeModel, path] of formats) {
    it(`${name}: text, deterministic usage, recorded system prompt and key`, async () => {
      const model = makeModel('key-' + name.replace(' ', '-'));
      const system = 'S'.repeat(40);
      const prompt = 'P'.repeat(80);
      const r = await generateText({ model, system, prompt, maxOutputTokens: 100, maxRetries: 0 });
      expect(r.text).toMatch(/^Test reply from /);
      expect(r.usage.inputTokens).toBe(30); // (40 + 80) / 4
      expect(r.usage.outputTokens).toBe(7);
      const rec = upstream.requests.at(-1)!;
      expect(rec.path).toBe(path);
      expect(rec.system).toBe(system);
      expect(rec.content).toBe(prompt);
      expect(rec.apiKey).toBe('key-' + name.replace(' ', '-'));
      expect(rec.maxTokens).toBe(100);
    });
  }

  it('caps output tokens at the requested maximum', async () => {
    const model = createOpenAI({ apiKey: 'k', baseURL: upstream.baseUrls.openai }).chat('gpt-x');
    const r = await generateText({ model, prompt: 'hi', maxOutputTokens: 3, maxRetries: 0 });
    expect(r.usage.outputTokens).toBe(3);
    expect(r.finishReason).toBe('length');
  });

  // Each format's stop-sequence stop, as the SDK reads it: only Anthropic's names the sequence.
  for (const [name, makeModel] of formats.filter(([n]) => n !== 'openai responses')) {
    it(`${name}: a stop sequence in the reply ends it there, plain and streamed`, async () => {
      const model = makeModel('k');
      const args = { model, prompt: 'hi', stopSequences: ['never', 'from'], maxOutputTokens: 100, maxRetries: 0 };
      const plain = await generateText(args);
      const streamed = streamText(args);
      for (const r of [
        { text: plain.text, finishReason: plain.finishReason, raw: plain.rawFinishReason, meta: plain.providerMetadata },
        {
          text: await streamed.text,
          finishReason: await streamed.finishReason,
          raw: await streamed.rawFinishReason,
          meta: await streamed.providerMetadata,
        },
      ]) {
        expect(r.text).toBe('Test reply ');
        expect(r.finishReason).toBe('stop');
        if (name === 'anthropic') {
          expect(r.raw).toBe('stop_sequence');
          expect(r.meta?.anthropic?.stopSequence).toBe('from');
        } else expect(r.raw).toMatch(/^(stop|STOP)$/);
      }
    });
  }
});

describe('createTestUpstream faults', () => {
  const chat = (key = 'k') => createOpenAI({ apiKey: key, baseURL: upstream.baseUrls.openai }).chat('gpt-x');

  it('rejects keys starting with "invalid" with 401', async () => {
    const err = await generateText({ model: chat('invalid-key'), prompt: 'x', maxRetries: 0 }).catch((e: unknown) => e);
    expect(APICallError.isInstance(err) && err.statusCode).toBe(401);
  });

  it('marker 429 with retry-after', async () => {
    const err = await generateText({ model: chat(), prompt: 'x [[upstream:429:retry=7]]', maxRetries: 0 }).catch((e: unknown) => e);
    expect(APICallError.isInstance(err) && err.statusCode).toBe(429);
    expect(APICallError.isInstance(err) && err.responseHeaders?.['retry-after']).toBe('7');
  });

  it('failNext applies to the next request only', async () => {
    upstream.failNext({ kind: 'status', status: 500 });
    const err = await generateText({ model: chat(), prompt: 'x', maxRetries: 0 }).catch((e: unknown) => e);
    expect(APICallError.isInstance(err) && err.statusCode).toBe(500);
    const ok = await generateText({ model: chat(), prompt: 'x', maxRetries: 0 });
    expect(ok.text).toMatch(/Test reply/);
  });

  it('malformed JSON is an APICallError with status 200', async () => {
    const err = await generateText({ model: chat(), prompt: '[[upstream:malformed]]', maxRetries: 0 }).catch((e: unknown) => e);
    expect(APICallError.isInstance(err) && err.statusCode).toBe(200);
  });

  it('drop and reset fail the call', async () => {
    for (const marker of ['drop', 'reset']) {
      const err = await generateText({ model: chat(), prompt: `[[upstream:${marker}]]`, maxRetries: 0 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      expect(upstream.requests.at(-1)!.outcome).toBe(marker);
    }
  });

  it('hang is ended by the client abort, which the upstream records', async () => {
    const ac = new AbortController();
    const call = generateText({ model: chat(), prompt: '[[upstream:hang]]', maxRetries: 0, abortSignal: ac.signal }).catch(
      (e: unknown) => e,
    );
    await upstream.waitForRequests();
    ac.abort();
    expect(await call).toBeInstanceOf(Error);
    await expect.poll(() => upstream.requests.at(-1)!.aborted).toBe(true);
  });

  it('latency marker delays the answer', async () => {
    const started = performance.now();
    await generateText({ model: chat(), prompt: '[[upstream:latency=120]]', maxRetries: 0 });
    expect(performance.now() - started).toBeGreaterThanOrEqual(110);
  });

  it('GET models endpoints check the key per provider', async () => {
    const get = (path: string, headers: Record<string, string>) => fetch(upstream.url + path, { headers }).then((r) => r.status);
    expect(await get('/v1/models', { authorization: 'Bearer good' })).toBe(200);
    expect(await get('/v1/models', { authorization: 'Bearer invalid-x' })).toBe(401);
    expect(await get('/v1/models', { 'x-api-key': 'good' })).toBe(200);
    expect(await get('/v1beta/models', { 'x-goog-api-key': 'invalid' })).toBe(401);
    expect(await get('/api/v1/key', { authorization: 'Bearer good' })).toBe(200);
  });
});

describe('failProvider', () => {
  it('fails every request of one provider (model list included) until cleared; others are untouched', async () => {
    upstream.failProvider('google', { kind: 'status', status: 503 });
    const list = (path: string, headers: Record<string, string>) => fetch(upstream.url + path, { headers }).then((r) => r.status);
    expect(await list('/v1beta/models?pageSize=1', { 'x-goog-api-key': 'k' })).toBe(503);
    expect(await list('/v1beta/models?pageSize=1', { 'x-goog-api-key': 'k' })).toBe(503);
    expect(await list('/v1/models', { authorization: 'Bearer k' })).toBe(200);
    const google = createGoogleGenerativeAI({ apiKey: 'k', baseURL: upstream.baseUrls.google })('gemini-x');
    await expect(generateText({ model: google, prompt: 'hi', maxRetries: 0 })).rejects.toBeInstanceOf(APICallError);
    upstream.failProvider('google', undefined);
    expect(await list('/v1beta/models?pageSize=1', { 'x-goog-api-key': 'k' })).toBe(200);
  });
});
