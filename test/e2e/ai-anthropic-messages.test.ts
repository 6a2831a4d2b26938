// @every-node: CI runs this file on every Node version it tests (docs/testing.md, "CI: phases and times").
import { waitFor } from '@ai-backend/test-utils';
import { describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { createTestUpstream, rpcCall, SYSTEM_PROMPT, tokenFor } from './helpers/aiGateway.js';
import { fee, fundedUser, CHAT_MODELS, rejectionOf, startSixProviderServer, sixProviderSuite } from './helpers/sixProviders.js';
import { describeV1Matrix } from './helpers/describeMatrix.js';

/**
 * POST /v1/messages and /v1/messages/count_tokens driven by the official `@anthropic-ai/sdk`
 * client, unchanged, for the four built-ins and two named providers (openai-compatible and the
 * AI SDK's Mistral package): text, streams, tools, balances exact, Anthropic-shaped errors.
 */
const MODELS = CHAT_MODELS;

describeV1Matrix('/v1/messages', (mode, path) => {
  const suite = sixProviderSuite(mode, 'an-user', { outputTokens: 16 }, path);
  const { balanceOf } = suite;
  async function funded(tokens: number) {
    const token = await suite.fundedToken(tokens);
    return { token, client: new Anthropic({ baseURL: suite.gw.url, authToken: token, apiKey: null, maxRetries: 0 }) };
  }

  describe('@anthropic-ai/sdk against /v1/messages', () => {
    for (const provider of Object.keys(MODELS)) {
      it(`${provider}: messages.create with system blocks, metered exactly`, async () => {
        const u = await funded(10_000);
        const r = await u.client.messages.create({
          model: MODELS[provider]!,
          max_tokens: 64,
          system: [{ type: 'text', text: '@support' }],
          messages: [{ role: 'user', content: 'Hello' }],
        });
        expect(r.type).toBe('message');
        expect(r.content[0]).toMatchObject({ type: 'text' });
        expect((r.content[0] as { text: string }).text).toMatch(/^Test reply from/);
        expect(r.stop_reason).toBe('end_turn');
        const rec = suite.upstream.requests.at(-1)!;
        expect(rec.provider).toBe(provider);
        expect(rec.system).toBe(SYSTEM_PROMPT);
        const used = r.usage.input_tokens + r.usage.output_tokens;
        expect(r.usage.output_tokens).toBe(16);
        expect(await balanceOf(u.token)).toBe(10_000 - used - fee(used));
        expect(JSON.stringify(r)).not.toContain(SYSTEM_PROMPT);
      });

      it(`${provider}: stream, the SDK's MessageStream assembles text and usage`, async () => {
        const u = await funded(10_000);
        const stream = u.client.messages.stream({
          model: MODELS[provider]!,
          max_tokens: 64,
          messages: [{ role: 'user', content: 'Stream it' }],
        });
        let text = '';
        stream.on('text', (t) => (text += t));
        const final = await stream.finalMessage();
        expect(text).toMatch(/^Test reply from/);
        expect(final.usage.output_tokens).toBe(16);
        // message_start says 0 on the SDK path; the MessageStream takes the input from message_delta.
        expect(final.usage.input_tokens).toBeGreaterThan(0);
        const used = final.usage.input_tokens + final.usage.output_tokens;
        expect(await balanceOf(u.token)).toBe(10_000 - used - fee(used));
      });

      // The test upstream's reply ("Test reply from …") stops at `from`. Anthropic names the
      // sequence it stopped on; the other providers say only that the model stopped, which is
      // `end_turn` with no sequence (docs/ai.md, "Anthropic Messages API"). OpenAI's Responses API
      // takes no stop sequences, so a call with some goes to its Chat Completions, which stops.
      it(`${provider}: stop_sequences: stop_reason and stop_sequence, plain and streamed`, async () => {
        const u = await funded(10_000);
        const ask = {
          model: MODELS[provider]!,
          max_tokens: 64,
          stop_sequences: ['never', 'from'],
          messages: [{ role: 'user' as const, content: 'Hi' }],
        };
        const expected =
          provider === 'anthropic'
            ? { stop_reason: 'stop_sequence', stop_sequence: 'from' }
            : { stop_reason: 'end_turn', stop_sequence: null };
        const text = 'Test reply ';
        const r = await u.client.messages.create(ask);
        expect(r.content).toEqual([expect.objectContaining({ type: 'text', text })]);
        expect({ stop_reason: r.stop_reason, stop_sequence: r.stop_sequence }).toEqual(expected);
        const stream = u.client.messages.stream(ask);
        const deltas: unknown[] = [];
        stream.on('streamEvent', (e) => {
          if (e.type === 'message_delta') deltas.push(e.delta);
        });
        const final = await stream.finalMessage();
        expect(final.content).toEqual([expect.objectContaining({ type: 'text', text })]);
        expect({ stop_reason: final.stop_reason, stop_sequence: final.stop_sequence }).toEqual(expected);
        expect(deltas).toEqual([expect.objectContaining(expected)]);
      });
    }

    it('tools: tool_use answered, tool_result sent back', async () => {
      const u = await funded(10_000);
      const tools = [
        {
          name: 'get_weather',
          description: 'weather',
          input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
        },
      ];
      const r = await u.client.messages.create({
        model: MODELS.mist!,
        max_tokens: 64,
        tools,
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
      });
      expect(r.stop_reason).toBe('tool_use');
      const call = r.content.find((b) => b.type === 'tool_use')!;
      expect(call).toMatchObject({ name: 'get_weather', input: { city: 'test' } });
      const r2 = await u.client.messages.create({
        model: MODELS.anthropic!,
        max_tokens: 64,
        tools,
        messages: [
          { role: 'user', content: 'Weather in Paris?' },
          { role: 'assistant', content: [call] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: (call as { id: string }).id, content: '21C' }] },
        ],
      });
      expect((r2.content[0] as { text: string }).text).toContain('[tool result received]');
    });

    it('count_tokens answers input_tokens without charging', async () => {
      const u = await funded(1_000);
      const r = await u.client.messages.countTokens({
        model: MODELS.openai!,
        system: 'abcd',
        messages: [{ role: 'user', content: 'x'.repeat(40) }],
      });
      expect(r.input_tokens).toBe(Math.ceil(44 / 4));
      expect(await balanceOf(u.token)).toBe(1_000);
    });

    it("errors arrive in Anthropic's shape: upstream 429, unknown model, missing max_tokens, no credit, bad credential", async () => {
      const u = await funded(10_000);
      const err = (p: Promise<unknown>) => rejectionOf<InstanceType<typeof Anthropic.APIError>>(p);
      const limited = await err(
        u.client.messages.create({
          model: MODELS.mist!,
          max_tokens: 16,
          messages: [{ role: 'user', content: 'x [[upstream:429:retry=3]]' }],
        }),
      );
      expect(limited).toBeInstanceOf(Anthropic.RateLimitError);
      expect(limited.error).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
      const unknown = await err(u.client.messages.create({ model: 'nope/x', max_tokens: 16, messages: [{ role: 'user', content: 'x' }] }));
      expect(unknown).toBeInstanceOf(Anthropic.BadRequestError);
      expect(unknown.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
      const noMax = await err(
        fetch(`${suite.gw.url}/v1/messages`, {
          method: 'POST',
          headers: { authorization: `Bearer ${u.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: MODELS.openai, messages: [{ role: 'user', content: 'x' }] }),
        }).then(async (r) => {
          throw Object.assign(new Error(), { status: r.status, error: await r.json() });
        }),
      );
      expect(noMax).toMatchObject({ status: 400, error: { type: 'error', error: { type: 'invalid_request_error' } } });
      const poor = await funded(1);
      const paid = await err(
        poor.client.messages.create({ model: MODELS.openai!, max_tokens: 16, messages: [{ role: 'user', content: 'x' }] }),
      );
      expect(paid.status).toBe(402);
      expect(paid.error).toMatchObject({ type: 'error', error: { type: 'billing_error' } });
      const badKey = await err(
        new Anthropic({ baseURL: suite.gw.url, apiKey: 'aib_not-a-real-key', maxRetries: 0 }).messages.create({
          model: MODELS.openai!,
          max_tokens: 16,
          messages: [{ role: 'user', content: 'x' }],
        }),
      );
      expect(badKey).toBeInstanceOf(Anthropic.AuthenticationError);
      expect(badKey.error).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    });

    it("Claude Code style: a bare Claude model id, ?beta=true, anthropic-beta, models.list in Anthropic's shape", async () => {
      const u = await funded(10_000);
      const res = await fetch(`${suite.gw.url}/v1/messages?beta=true`, {
        method: 'POST',
        headers: {
          'x-api-key': u.token,
          'anthropic-version': '2023-06-01',
          'anthropic-beta': 'claude-code-20250219',
          'content-type': 'application/json',
        },
        body: JSON.stringify({
          model: 'claude-sonnet-4-5',
          max_tokens: 32,
          system: [{ type: 'text', text: 'be brief', cache_control: { type: 'ephemeral' } }],
          messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
        }),
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ type: 'message', model: 'claude-sonnet-4-5' });
      expect(suite.upstream.requests.at(-1)).toMatchObject({ provider: 'anthropic', model: 'claude-sonnet-4-5' });
      const page = await u.client.models.list();
      expect(page.data.map((m) => m.id)).toEqual(
        expect.arrayContaining(['anthropic/claude-sonnet-4-5', 'local/org/llama-3-8b', 'mist/mistral-small-latest']),
      );
      expect(page.data[0]).toMatchObject({ type: 'model' });
    });

    it("models.retrieve of an unknown model and an unknown path answer an Anthropic client in Anthropic's shape", async () => {
      const u = await funded(10_000);
      const missing = await rejectionOf<InstanceType<typeof Anthropic.NotFoundError>>(u.client.models.retrieve('nope/none'));
      expect(missing).toBeInstanceOf(Anthropic.NotFoundError);
      expect(missing.error).toMatchObject({
        type: 'error',
        error: { type: 'not_found_error', message: expect.stringContaining('nope/none') },
      });
      const found = await u.client.models.retrieve('anthropic/claude-sonnet-4-5');
      expect(found).toMatchObject({ type: 'model', id: 'anthropic/claude-sonnet-4-5' });
      const batches = await rejectionOf<InstanceType<typeof Anthropic.NotFoundError>>(u.client.messages.batches.list());
      expect(batches).toBeInstanceOf(Anthropic.NotFoundError);
      expect(batches.error).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
      // An OpenAI client on the same routes still reads OpenAI's shape.
      const openai = new OpenAI({ baseURL: `${suite.gw.url}/v1`, apiKey: u.token, maxRetries: 0 });
      const oMissing = await rejectionOf<InstanceType<typeof OpenAI.NotFoundError>>(openai.models.retrieve('nope/none'));
      expect(oMissing).toBeInstanceOf(OpenAI.NotFoundError);
      expect(oMissing.error).toMatchObject({ type: 'not_found_error', param: 'model' });
    });

    it("malformed bodies get a 400 in each format's own shape, never a 500, nothing charged", async () => {
      const u = await funded(10_000);
      const post = async (path: string, body: unknown) => {
        const res = await fetch(`${suite.gw.url}/v1/${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${u.token}`, 'content-type': 'application/json' },
          body: typeof body === 'string' ? body : JSON.stringify(body),
        });
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      };
      const anthropicBad: unknown[] = [
        '{not json',
        [],
        { model: 5, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] },
        { model: 'openai', max_tokens: '10', messages: [{ role: 'user', content: 'x' }] },
        { model: 'openai', max_tokens: 10, messages: 'x' },
        { model: 'openai', max_tokens: 10, messages: [{ role: 'system', content: 'x' }] },
        {
          model: 'openai',
          max_tokens: 10,
          messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', path: '/etc/passwd' } }] }],
        },
        { model: 'openai', max_tokens: 10, messages: [{ role: 'user', content: [null] }] },
        { model: 'openai', max_tokens: 10, system: [{ type: 'image' }], messages: [{ role: 'user', content: 'x' }] },
        {
          model: 'openai',
          max_tokens: 10,
          tools: [{ type: 'web_search_20250305', name: 'web_search' }],
          messages: [{ role: 'user', content: 'x' }],
        },
        { model: 'openai', max_tokens: 10, stream: 'yes', messages: [{ role: 'user', content: 'x' }] },
        { model: '../../etc', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] },
        { model: 'openai/../../x', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] },
      ];
      for (const body of anthropicBad) {
        for (const path of ['messages', 'messages/count_tokens']) {
          const r = await post(path, body);
          expect(r.status, `${path} ${JSON.stringify(body)}`).toBe(400);
          expect(r.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.any(String) } });
        }
      }
      const openaiBad: Array<[string, unknown]> = [
        ['responses', { model: 'openai', input: [] }],
        ['responses', { model: 'openai', input: [{ role: 'tool', content: 'x' }] }],
        ['responses', { model: 'openai', input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: '{bad' }] }],
        ['responses', { model: 'openai', input: 'x', text: { format: { type: 'yaml' } } }],
        ['responses', { model: 'openai', input: 'x', tools: [{ type: 'web_search' }] }],
        ['responses', { model: 'openai', input: 'x', max_output_tokens: 10 ** 9 }],
        ['embeddings', { model: 'openai/text-embedding-3-small', input: [1, 2, 3] }],
        ['embeddings', { model: 'openai/text-embedding-3-small', input: [] }],
        ['embeddings', { model: 'openai/text-embedding-3-small', input: 'x', encoding_format: 'hex' }],
        ['embeddings', { model: 'openai/text-embedding-3-small', input: Array.from({ length: 3000 }, () => 'x') }],
      ];
      for (const [path, body] of openaiBad) {
        const r = await post(path, body);
        expect(r.status, `${path} ${JSON.stringify(body).slice(0, 100)}`).toBe(400);
        expect(r.body).toMatchObject({ error: { type: 'invalid_request_error', message: expect.any(String) } });
      }
      // The HTTP edge's refusals too (a body over limits.bodyLimit, a body that is not JSON), in
      // the shape of the format the path speaks.
      const limit = suite.gw.runtime.config.limits.bodyLimit;
      const huge = { model: 'openai', max_tokens: 10, messages: [{ role: 'user', content: 'x'.repeat(limit + 10) }] };
      for (const path of ['messages', 'messages/count_tokens']) {
        const r = await post(path, huge);
        expect(r.status, path).toBe(413);
        expect(r.body).toMatchObject({ type: 'error', error: { type: 'request_too_large', message: expect.any(String) } });
        const text = await fetch(`${suite.gw.url}/v1/${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${u.token}`, 'content-type': 'text/plain' },
          body: 'hi',
        });
        expect(text.status, path).toBe(415);
        expect(await text.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
      }
      for (const path of ['chat/completions', 'responses']) {
        const r = await post(path, { model: 'openai', input: 'x'.repeat(limit + 10) });
        expect(r.status, path).toBe(413);
        expect(r.body).toMatchObject({ error: { type: 'invalid_request_error', code: 'payload_too_large' } });
      }
      expect(await balanceOf(u.token)).toBe(10_000);
    });

    it('a stream the client aborts is settled once: charged what was produced, at most its hold', async () => {
      const u = await funded(10_000);
      suite.upstream.setChunkDelay(30);
      try {
        const stream = u.client.messages.stream({
          model: MODELS.openai!,
          max_tokens: 64,
          messages: [{ role: 'user', content: 'a long story' }],
        });
        let deltas = 0;
        await new Promise<void>((resolve) => {
          stream.on('text', () => {
            if (++deltas === 2) {
              stream.abort();
              resolve();
            }
          });
          stream.on('error', () => resolve());
          stream.on('abort', () => resolve());
        });
        await stream.done().catch(() => undefined);
        // The settlement runs when the server sees the connection go: await its usage record; then the balance stays.
        await waitFor(async () => (await rpcCall(suite.gw.url, u.token, 'billing.getUsageHistory')).result.usage.length > 0, {
          what: 'the aborted stream settled',
        });
        const balance = await balanceOf(u.token);
        const charged = 10_000 - balance;
        expect(charged).toBeGreaterThan(0);
        expect(charged).toBeLessThan(400); // far below the hold (input bound + 64, plus the fee)
        // A deliberate pause: time for a second settlement to arrive (asserting none does).
        await new Promise((r) => setTimeout(r, 300));
        expect(await balanceOf(u.token)).toBe(balance); // settled exactly once
      } finally {
        suite.upstream.setChunkDelay(0);
      }
    });
  });

  describe('/v1/messages, /v1/responses and /v1/embeddings share the rate limits of the other entry points', () => {
    it('maxToolCalls counts them like ai.generateText on /rpc; each refusal is a 429 in its own shape', async () => {
      const up = await createTestUpstream();
      const limited = await startSixProviderServer(
        up,
        {},
        { mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: true, windowMs: 60_000, maxRequests: 1000, maxToolCalls: 3 } } },
        mode,
      );
      try {
        const t = await fundedUser(limited, await tokenFor('rl-admin', { admin: true }), 'rl-user', 100_000);
        const anthropic = new Anthropic({ baseURL: limited.url, authToken: t, apiKey: null, maxRetries: 0 });
        const openai = new OpenAI({ baseURL: limited.url + '/v1', apiKey: t, maxRetries: 0 });
        await anthropic.messages.create({ model: 'openai', max_tokens: 16, messages: [{ role: 'user', content: 'x' }] });
        await openai.responses.create({ model: 'openai', input: 'x' });
        await openai.embeddings.create({ model: 'openai/text-embedding-3-small', input: 'x' });
        const e = await rejectionOf<InstanceType<typeof OpenAI.APIError>>(
          openai.embeddings.create({ model: 'openai/text-embedding-3-small', input: 'x' }),
        );
        expect(e).toBeInstanceOf(OpenAI.RateLimitError);
        const a = await rejectionOf<InstanceType<typeof Anthropic.APIError>>(
          anthropic.messages.create({ model: 'openai', max_tokens: 16, messages: [{ role: 'user', content: 'x' }] }),
        );
        expect(a).toBeInstanceOf(Anthropic.RateLimitError);
        expect(a.error).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
        const o = await rejectionOf<InstanceType<typeof OpenAI.APIError>>(openai.responses.create({ model: 'openai', input: 'x' }));
        expect(o).toBeInstanceOf(OpenAI.RateLimitError);
        expect(o.headers?.get('retry-after')).toBeTruthy();
      } finally {
        await limited.stop();
        await up.close();
      }
    });
  });
});
