import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import {
  createTestUpstream,
  creditTokens,
  startAiServer,
  tokenFor,
  waitFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { describeV1Paths } from './helpers/describeMatrix.js';

/**
 * The response cache on /v1 with the official openai client: `x-ai-backend-cache: miss` then
 * `hit` (and `ai_backend.cache`), `cache-control: no-store` and `x-ai-backend-cache: off` leave
 * it, a stream is replayed as a stream, and one user's entry never answers another.
 */
let upstream: TestUpstream;
let gw: AiServer;
let admin: string;

describeV1Paths('ai-cache', (path) => {
  beforeAll(async () => {
    upstream = await createTestUpstream({ outputTokens: 16 });
    gw = await startAiServer(upstream, { storage: { type: 'memory' }, ai: { cache: { enabled: true } } }, { path });
    admin = await tokenFor('cache-admin', { admin: true });
  });
  afterAll(async () => {
    await gw.stop();
    await upstream.close();
  });

  async function client(sub: string): Promise<OpenAI> {
    await creditTokens(gw.url, admin, sub, 1_000_000, `cache-${sub}`);
    return new OpenAI({ baseURL: gw.url + '/v1', apiKey: await tokenFor(sub), maxRetries: 0 });
  }
  const chatCalls = () => upstream.requests.filter((r) => r.format !== 'models').length;
  const ask = (content: string) => ({ model: 'openai/gpt-4.1-nano', messages: [{ role: 'user' as const, content }], max_tokens: 20 });
  /** Answers in the response cache (its byte counters left out). */
  const cachedAnswers = async () => (await gw.runtime.storage.keys('aicache:')).filter((k) => !k.startsWith('aicache:bytes:')).length;
  /** The cache stores an answer in the background, after it was sent: wait until it holds one more than `before`. */
  const stored = (before: number) => waitFor(async () => (await cachedAnswers()) > before, { what: 'the answer stored in the cache' });

  describe('response cache on /v1', () => {
    it('miss then hit, said in the header and in ai_backend; no-store and off leave the cache; another user misses', async () => {
      const alice = await client('cache-alice');
      const bob = await client('cache-bob');
      upstream.reset();
      const before = await cachedAnswers();
      const first = await alice.chat.completions.create(ask('cache me')).withResponse();
      expect(first.response.headers.get('x-ai-backend-cache')).toBe('miss');
      await stored(before);
      const second = await alice.chat.completions.create(ask('cache me')).withResponse();
      expect(second.response.headers.get('x-ai-backend-cache')).toBe('hit');
      // The SDK path's answer says it in ai_backend; a passed-through one is the provider's body, given again as it came.
      if (path === 'sdk') expect((second.data as unknown as { ai_backend: { cache: string } }).ai_backend.cache).toBe('hit');
      else expect(second.data).toEqual(first.data);
      expect(second.data.choices[0]!.message.content).toBe(first.data.choices[0]!.message.content);
      expect(chatCalls()).toBe(1);
      const noStore = await alice.chat.completions.create(ask('cache me'), { headers: { 'cache-control': 'no-store' } }).withResponse();
      expect(noStore.response.headers.get('x-ai-backend-cache')).toBeNull();
      const off = await alice.chat.completions.create(ask('cache me'), { headers: { 'x-ai-backend-cache': 'off' } }).withResponse();
      expect(off.response.headers.get('x-ai-backend-cache')).toBeNull();
      const other = await bob.chat.completions.create(ask('cache me')).withResponse();
      expect(other.response.headers.get('x-ai-backend-cache')).toBe('miss');
      expect(chatCalls()).toBe(4);
    });

    it('the same request with its body fields in another order is a hit', async () => {
      const alice = await client('cache-order');
      upstream.reset();
      const messages = [{ role: 'user' as const, content: 'order me' }];
      const send = (body: OpenAI.ChatCompletionCreateParamsNonStreaming) =>
        alice.chat.completions
          .create(body)
          .withResponse()
          .then((r) => r.response.headers.get('x-ai-backend-cache'));
      const asked = { model: 'openai/gpt-4.1-nano', messages, max_tokens: 20, temperature: 0, response_format: { type: 'text' as const } };
      expect(await send(asked)).toBe('miss');
      // The entry is written after the answer: the same bytes again hit once it is there.
      await waitFor(async () => (await send(asked)) === 'hit', { what: 'the entry stored', timeoutMs: 5_000, intervalMs: 50 });
      const calls = chatCalls();
      const reordered = {
        response_format: { type: 'text' as const },
        temperature: 0,
        max_tokens: 20,
        messages,
        model: 'openai/gpt-4.1-nano',
      };
      expect(await send(reordered)).toBe('hit');
      expect(chatCalls()).toBe(calls);
    });

    it('on /rpc the x-ai-backend-cache header works as the cache option: off neither reads nor stores, on uses it', async () => {
      await client('cache-rpc');
      const token = await tokenFor('cache-rpc');
      upstream.reset();
      const rpc = async (headers: Record<string, string> = {}) => {
        const res = await fetch(gw.url + '/rpc', {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...headers },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'ai.generateText',
            params: { content: 'rpc cache', systemPrompt: 's', model: 'openai/gpt-4.1-nano', options: { maxTokens: 20 } },
          }),
        });
        return ((await res.json()) as { result: { data: { cache?: string } } }).result.data.cache;
      };
      // Off: not stored, so the next call (with the cache) misses.
      expect(await rpc({ 'x-ai-backend-cache': 'off' })).toBeUndefined();
      expect(await rpc({ 'x-ai-backend-cache': 'on' })).toBe('miss');
      await waitFor(async () => (await rpc()) === 'hit', { what: 'the entry stored', timeoutMs: 5_000, intervalMs: 50 });
      const calls = chatCalls();
      // Off: not read either (the upstream is called though an entry exists).
      expect(await rpc({ 'x-ai-backend-cache': 'off' })).toBeUndefined();
      expect(chatCalls()).toBe(calls + 1);
    });

    it('a streamed request is replayed as a stream', async () => {
      const alice = await client('cache-stream');
      upstream.reset();
      const read = async () => {
        const { data: stream, response } = await alice.chat.completions.create({ ...ask('stream me'), stream: true }).withResponse();
        let text = '';
        for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
        return { text, header: response.headers.get('x-ai-backend-cache') };
      };
      const before = await cachedAnswers();
      const a = await read();
      await stored(before);
      const b = await read();
      expect(a.header).toBe('miss');
      expect(b).toEqual({ text: a.text, header: 'hit' });
      expect(a.text.length).toBeGreaterThan(0);
      expect(chatCalls()).toBe(1);
    });
  });
});
