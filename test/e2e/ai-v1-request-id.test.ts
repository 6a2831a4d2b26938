import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import {
  createTestUpstream,
  creditTokens,
  REQUEST_ID_V7,
  startAiServer,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { describeV1Matrix } from './helpers/describeMatrix.js';

/**
 * The request id the official clients expose (docs/ai.md, "OpenAI-compatible endpoint"): the
 * `openai` client reads `x-request-id` into `_request_id` (and `withResponse().request_id`),
 * `@anthropic-ai/sdk` reads `request-id` into `_request_id` and a stream's `request_id`. The
 * providers always send one; /v1 sends the call's ledger request id (`ai_backend.request_id`,
 * `x-ai-backend-request-id` on the pass-through path) in both, plain and streamed, on both paths.
 */
let upstream: TestUpstream;
let gw: AiServer;
let token: string;
/** `_request_id`, which the clients define on the parsed body (not on `withResponse().data`'s type). */
const requestIdOf = (data: object) => (data as { _request_id?: string | null })._request_id;

describeV1Matrix('/v1 request ids for the official clients', (mode, path) => {
  beforeAll(async () => {
    upstream = await createTestUpstream({ outputTokens: 8 });
    gw = await startAiServer(upstream, {}, { mode, path });
    await creditTokens(gw.url, await tokenFor('rid-admin', { admin: true }), 'rid-user', 100_000, 'k-rid');
    token = await tokenFor('rid-user');
  });
  afterAll(async () => {
    await gw.stop();
    await upstream.close();
  });

  /** The ledger's id of the call: in the body on the SDK path, in a header on the pass-through path. */
  const ledgerId = (body: unknown, headers: Headers) =>
    (body as { ai_backend?: { request_id?: string } }).ai_backend?.request_id ?? headers.get('x-ai-backend-request-id');

  describe('openai client', () => {
    const client = () => new OpenAI({ baseURL: gw.url + '/v1', apiKey: token, maxRetries: 0 });

    it('chat.completions.create: _request_id is the call id', async () => {
      const { data, response, request_id } = await client()
        .chat.completions.create({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'hi' }] })
        .withResponse();
      expect(request_id).toMatch(REQUEST_ID_V7);
      expect(requestIdOf(data)).toBe(request_id);
      expect(request_id).toBe(ledgerId(data, response.headers));
    });

    it('a streamed chat completion and responses.create carry it too', async () => {
      const { response, request_id } = await client()
        .chat.completions.create({ model: 'openai/gpt-4.1-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] })
        .withResponse();
      expect(request_id).toMatch(REQUEST_ID_V7);
      if (path === 'pass-through') expect(request_id).toBe(response.headers.get('x-ai-backend-request-id'));
      await response.body?.cancel();

      const r = await client().responses.create({ model: 'openai/gpt-4.1-mini', input: 'hi' }).withResponse();
      expect(r.request_id).toMatch(REQUEST_ID_V7);
      expect(r.request_id).toBe(ledgerId(r.data, r.response.headers));
    });
  });

  describe('@anthropic-ai/sdk client', () => {
    const client = () => new Anthropic({ baseURL: gw.url, apiKey: token, maxRetries: 0 });

    it('messages.create: _request_id is the call id', async () => {
      const { data, response } = await client()
        .messages.create({ model: 'claude-sonnet-4-5', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] })
        .withResponse();
      expect(requestIdOf(data)).toMatch(REQUEST_ID_V7);
      expect(requestIdOf(data)).toBe(ledgerId(data, response.headers));
    });

    it('messages.stream: request_id', async () => {
      const stream = client().messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
      await stream.finalMessage();
      expect(stream.request_id).toMatch(REQUEST_ID_V7);
    });
  });
});
