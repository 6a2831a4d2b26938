import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { createTestUpstream, creditTokens, startAiServer, tokenFor, type AiServer, type TestUpstream } from './helpers/aiGateway.js';
import { describeV1Matrix } from './helpers/describeMatrix.js';

/**
 * The official clients' retries against /v1 (docs/ai.md, "OpenAI-compatible endpoint"): the
 * `openai` and `@anthropic-ai/sdk` clients repeat every 5xx twice by default unless the answer
 * says `x-should-retry: false`. A provider's refusal of the key is our 502, its refusal of the
 * request itself the provider's own 400 / 404 / 413 (docs/ai.md#errors), with the provider's
 * error code: a repeat is refused the same way, so it must reach the provider once, not three
 * times, on both paths; a provider's 5xx is still worth the retries.
 */
let upstream: TestUpstream;
let gw: AiServer;
let token: string;

describeV1Matrix('/v1 and the official clients retries', (mode, path) => {
  beforeAll(async () => {
    upstream = await createTestUpstream({ outputTokens: 8 });
    gw = await startAiServer(upstream, {}, { mode, path });
    await creditTokens(gw.url, await tokenFor('retry-admin', { admin: true }), 'retry-user', 100_000, 'k-retry');
    token = await tokenFor('retry-user');
  });
  afterAll(async () => {
    await gw.stop();
    await upstream.close();
  });

  // The clients' default: two retries (spelled out so the test does not depend on it).
  const openai = (headers: Record<string, string> = {}) =>
    new OpenAI({ baseURL: gw.url + '/v1', apiKey: token, maxRetries: 2, defaultHeaders: headers });
  const anthropic = () => new Anthropic({ baseURL: gw.url, apiKey: token, maxRetries: 2 });
  const sent = (tag: string) => upstream.requests.filter((r) => r.content.includes(tag)).length;

  describe('a request the provider refuses (HTTP 400) is sent upstream once', () => {
    it('chat.completions.create, plain and streamed', async () => {
      for (const stream of [false, true]) {
        const tag = `chat-400-${stream}`;
        const res = await openai()
          .chat.completions.create({
            model: 'openai/gpt-4.1-mini',
            stream,
            messages: [{ role: 'user', content: `${tag} [[upstream:400]]` }],
          })
          .catch((e: unknown) => e);
        expect(res).toBeInstanceOf(OpenAI.BadRequestError);
        expect((res as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
        expect((res as InstanceType<typeof OpenAI.APIError>).headers?.get('x-should-retry')).toBe('false');
        expect(sent(tag)).toBe(1);
      }
    });

    it("the provider's own error code and param reach the client, never its message", async () => {
      for (const stream of [false, true]) {
        const tag = `chat-too-long-${stream}`;
        upstream.failNext({ kind: 'status', status: 400, code: 'context_length_exceeded', param: 'messages' });
        const res = (await openai()
          .chat.completions.create({ model: 'openai/gpt-4.1-mini', stream, messages: [{ role: 'user', content: tag }] })
          .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
        expect(res).toBeInstanceOf(OpenAI.BadRequestError);
        expect(res.code).toBe('context_length_exceeded');
        expect(res.param).toBe('messages');
        expect(res.type).toBe('invalid_request_error');
        // The test upstream's message quotes the request's system prompt: never passed on.
        expect(res.message).toContain('rejected the request (HTTP 400: context_length_exceeded)');
        expect(res.message).not.toContain('system prompt');
        expect(sent(tag)).toBe(1);
      }
    });

    it("a refusal about the platform's account is our 502, without the provider's code", async () => {
      upstream.failNext({ kind: 'status', status: 400, code: 'billing_hard_limit_reached' });
      const res = (await openai()
        .chat.completions.create({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'account-refused' }] })
        .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
      expect(res.status).toBe(502);
      expect(res.code).toBe('upstream_error');
      expect(res.headers?.get('x-should-retry')).toBe('false');
      expect(sent('account-refused')).toBe(1);
    });

    it('a model the provider does not have is 404, a path it does not serve stays our 502', async () => {
      upstream.failNext({ kind: 'status', status: 404 });
      const missing = (await openai()
        .chat.completions.create({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'no-such-model' }] })
        .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
      expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
      expect(missing.code).toBe('model_not_found');
      upstream.failNext({ kind: 'status', status: 404, code: 'unknown_url' });
      const path = (await anthropic()
        .messages.create({ model: 'claude-sonnet-4-5', max_tokens: 50, messages: [{ role: 'user', content: 'no-such-path' }] })
        .catch((e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>;
      expect(path).toBeInstanceOf(Anthropic.APIError);
      expect(path.status).toBe(502);
      expect(path.headers?.get('x-should-retry')).toBe('false');
      expect(sent('no-such-path')).toBe(1);
      upstream.failNext({ kind: 'status', status: 413 });
      const large = (await anthropic()
        .messages.create({ model: 'claude-sonnet-4-5', max_tokens: 50, messages: [{ role: 'user', content: 'too-large' }] })
        .catch((e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>;
      expect(large.status).toBe(413);
      expect((large.error as { error?: { type?: string } }).error?.type).toBe('request_too_large');
    });

    it('responses.create and messages.create', async () => {
      const r = await openai()
        .responses.create({ model: 'openai/gpt-4.1-mini', input: 'responses-400 [[upstream:400]]' })
        .catch((e: unknown) => e);
      expect(r).toBeInstanceOf(OpenAI.APIError);
      expect(sent('responses-400')).toBe(1);

      const m = await anthropic()
        .messages.create({
          model: 'claude-sonnet-4-5',
          max_tokens: 50,
          messages: [{ role: 'user', content: 'messages-400 [[upstream:400]]' }],
        })
        .catch((e: unknown) => e);
      expect(m).toBeInstanceOf(Anthropic.BadRequestError);
      expect((m as InstanceType<typeof Anthropic.APIError>).status).toBe(400);
      expect(sent('messages-400')).toBe(1);
    });
  });

  it('a caller key the provider refuses (BYOK) is tried once', async () => {
    const tag = 'byok-refused';
    const res = await openai({ 'x-provider-api-key': 'invalid-user-key' })
      .chat.completions.create({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: tag }] })
      .catch((e: unknown) => e);
    expect(res).toBeInstanceOf(OpenAI.APIError);
    expect((res as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    expect(sent(tag)).toBe(1);
  });

  it("a provider's 5xx is still retried by the client (three requests)", async () => {
    const tag = 'upstream-500';
    const res = await openai()
      .chat.completions.create({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: `${tag} [[upstream:500]]` }] })
      .catch((e: unknown) => e);
    expect(res).toBeInstanceOf(OpenAI.InternalServerError);
    expect((res as InstanceType<typeof OpenAI.APIError>).headers?.get('x-should-retry')).toBeNull();
    expect(sent(tag)).toBe(3);
  });
});
