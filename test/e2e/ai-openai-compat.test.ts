// @every-node: CI runs this file on every Node version it tests (docs/testing.md, "CI: phases and times").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, streamText } from 'ai';
import {
  createTestUpstream,
  creditTokens,
  PROVIDERS,
  rpcCall,
  SERVER_KEY,
  startAiServer,
  waitFor,
  SYSTEM_PROMPT,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { describeV1Matrix } from './helpers/describeMatrix.js';

/**
 * The OpenAI-compatible endpoint (/v1/chat/completions, /v1/models) driven by the official
 * `openai` client and the AI SDK's OpenAI-compatible provider, unchanged, for all four providers:
 * text, streaming with include_usage, tools, structured output, images, BYOK, aliases, errors.
 */
let upstream: TestUpstream;
let gw: AiServer;
let admin: string;
const MODELS: Record<(typeof PROVIDERS)[number], string> = {
  anthropic: 'anthropic/claude-sonnet-4-5',
  openai: 'openai/gpt-4.1-mini',
  google: 'google/gemini-2.5-flash',
  openrouter: 'openrouter/openai/gpt-5-mini',
};
const USER_KEY = 'sk-user-OWN-KEY-9999';
const PNG_1PX = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

describeV1Matrix('/v1/chat/completions and /v1/models', (mode, path) => {
  beforeAll(async () => {
    upstream = await createTestUpstream({ outputTokens: 16 });
    gw = await startAiServer(upstream, { storage: { type: 'memory' }, ai: { aliases: { fast: 'openai/gpt-4.1-mini' } } }, { mode, path });
    admin = await tokenFor('ops-admin', { admin: true });
  });
  afterAll(async () => {
    await gw.stop();
    await upstream.close();
  });

  let users = 0;
  async function funded(tokens: number) {
    const sub = `oa-user-${++users}`;
    await creditTokens(gw.url, admin, sub, tokens, `k-${sub}`);
    const token = await tokenFor(sub);
    return { sub, token, client: new OpenAI({ baseURL: gw.url + '/v1', apiKey: token, maxRetries: 0 }) };
  }
  async function balanceOf(token: string): Promise<number> {
    return (await rpcCall<{ virtualTokenBalance: number }>(gw.url, token, 'billing.getTokenBalance')).result!.virtualTokenBalance;
  }
  const fee = (n: number) => Math.ceil(n * 0.1);

  describe('openai client against /v1', () => {
    for (const provider of PROVIDERS) {
      it(`${provider}: chat.completions.create, metered like ai.generateText`, async () => {
        const u = await funded(10_000);
        const r = await u.client.chat.completions.create({
          model: MODELS[provider],
          messages: [
            { role: 'system', content: '@support' },
            { role: 'user', content: 'Hello' },
          ],
        });
        expect(r.object).toBe('chat.completion');
        expect(r.choices[0]!.message.content).toMatch(/^Test reply from/);
        expect(r.choices[0]!.finish_reason).toBe('stop');
        const rec = upstream.requests.at(-1)!;
        expect(rec.provider).toBe(provider);
        expect(rec.system).toBe(SYSTEM_PROMPT);
        const used = Math.ceil((SYSTEM_PROMPT.length + 'Hello'.length) / 4) + 16;
        expect(r.usage).toMatchObject({ prompt_tokens: used - 16, completion_tokens: 16, total_tokens: used });
        expect((r as unknown as { ai_backend: { provider: string } }).ai_backend.provider).toBe(provider);
        expect(await balanceOf(u.token)).toBe(10_000 - used - fee(used));
        expect(JSON.stringify(r)).not.toContain(SYSTEM_PROMPT);
      });

      it(`${provider}: stream: true with include_usage`, async () => {
        const u = await funded(10_000);
        const stream = await u.client.chat.completions.create({
          model: MODELS[provider],
          messages: [{ role: 'user', content: 'Stream it' }],
          stream: true,
          stream_options: { include_usage: true },
        });
        let text = '';
        let usage: OpenAI.CompletionUsage | null | undefined;
        let finish: string | null = null;
        for await (const chunk of stream) {
          text += chunk.choices[0]?.delta.content ?? '';
          finish = chunk.choices[0]?.finish_reason ?? finish;
          if (chunk.usage) usage = chunk.usage;
        }
        expect(text).toMatch(/^Test reply from/);
        expect(finish).toBe('stop');
        expect(usage?.completion_tokens).toBe(16);
        expect(await balanceOf(u.token)).toBe(10_000 - usage!.total_tokens - fee(usage!.total_tokens));
      });

      it(`${provider}: tools: the tool call comes back, the tool result continues the chat`, async () => {
        const u = await funded(20_000);
        const tools: OpenAI.ChatCompletionTool[] = [
          {
            type: 'function',
            function: {
              name: 'get_weather',
              description: 'Weather',
              parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
            },
          },
        ];
        const first = await u.client.chat.completions.create({
          model: MODELS[provider],
          messages: [{ role: 'user', content: 'Weather in Paris?' }],
          tools,
        });
        const call = first.choices[0]!.message.tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
        expect(first.choices[0]!.finish_reason).toBe('tool_calls');
        expect(call.function.name).toBe('get_weather');
        expect(JSON.parse(call.function.arguments)).toEqual({ city: 'test' });
        const second = await u.client.chat.completions.create({
          model: MODELS[provider],
          tools,
          messages: [
            { role: 'user', content: 'Weather in Paris?' },
            first.choices[0]!.message,
            { role: 'tool', tool_call_id: call.id, content: '{"temp":21}' },
          ],
        });
        expect(second.choices[0]!.message.content).toContain('[tool result received]');
      });

      it(`${provider}: response_format json_schema gives a validated object`, async () => {
        const u = await funded(10_000);
        const schema = {
          type: 'object',
          properties: { name: { type: 'string' }, age: { type: 'integer' } },
          required: ['name', 'age'],
          additionalProperties: false,
        };
        const r = await u.client.chat.completions.create({
          model: MODELS[provider],
          messages: [{ role: 'user', content: 'A person' }],
          response_format: { type: 'json_schema', json_schema: { name: 'person', schema } },
        });
        expect(JSON.parse(r.choices[0]!.message.content!)).toEqual({ name: 'test', age: 1 });
        expect((r as unknown as { ai_backend: { object: unknown } }).ai_backend.object).toEqual({ name: 'test', age: 1 });
      });

      it(`${provider}: an image part (base64 data URL) reaches the upstream`, async () => {
        const u = await funded(20_000);
        const before = upstream.requests.length;
        await u.client.chat.completions.create({
          model: MODELS[provider],
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'What is this?' },
                { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_1PX}` } },
              ],
            },
          ],
        });
        expect(upstream.requests[before]!.extras?.attachments).toBe(1);
      });
    }

    it('an image for a text-only model is a clear 400', async () => {
      const u = await funded(10_000);
      const err = await u.client.chat.completions
        .create({
          model: 'anthropic/claude-3-5-haiku-latest',
          messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_1PX}` } }] }],
        })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect((err as InstanceType<typeof OpenAI.BadRequestError>).message).toContain('does not accept image parts');
    });

    it('BYOK through the x-provider-api-key header: the own key goes upstream, nothing charged', async () => {
      const u = await funded(10_000);
      const client = new OpenAI({ baseURL: gw.url + '/v1', apiKey: u.token, defaultHeaders: { 'x-provider-api-key': USER_KEY } });
      const r = await client.chat.completions.create({ model: 'google/gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }] });
      expect(upstream.requests.at(-1)!.apiKey).toBe(USER_KEY);
      expect((r as unknown as { ai_backend: { usage_info: unknown } }).ai_backend.usage_info).toBeDefined();
      expect(await balanceOf(u.token)).toBe(10_000);
    });

    it('aliases and GET /v1/models', async () => {
      const u = await funded(10_000);
      const { data: r, response } = await u.client.chat.completions
        .create({ model: 'fast', messages: [{ role: 'user', content: 'hi' }] })
        .withResponse();
      // The SDK path echoes the alias; a pass-through answer is the upstream's, naming its model (docs/ai.md#pass-through).
      expect(r.model).toBe(response.headers.get('x-ai-backend-path') === 'pass-through' ? 'gpt-4.1-mini' : 'fast');
      expect(upstream.requests.at(-1)!.model).toBe('gpt-4.1-mini');
      const ids = [];
      for await (const m of u.client.models.list()) ids.push(m.id);
      expect(ids).toEqual(
        expect.arrayContaining(['openai/gpt-4.1-mini', 'anthropic/claude-sonnet-4-5', 'openrouter/openai/gpt-5-mini', 'fast']),
      );
    });

    it('OpenAI-style errors: bad token 401, no balance 402, unknown provider 400', async () => {
      const bad = new OpenAI({ baseURL: gw.url + '/v1', apiKey: 'not-a-jwt', maxRetries: 0 });
      const e1 = await bad.chat.completions
        .create({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'x' }] })
        .catch((e: unknown) => e);
      expect(e1).toBeInstanceOf(OpenAI.AuthenticationError);
      const broke = new OpenAI({ baseURL: gw.url + '/v1', apiKey: await tokenFor('oa-broke'), maxRetries: 0 });
      const e2 = (await broke.chat.completions
        .create({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'x' }] })
        .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
      expect(e2.status).toBe(402);
      expect(e2.code).toBe('payment_required');
      const e3 = (await broke.chat.completions
        .create({ model: 'nope/x', messages: [{ role: 'user', content: 'x' }] })
        .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
      expect(e3).toBeInstanceOf(OpenAI.BadRequestError);
      expect(e3.message).toContain('provider/model');
    });

    it('a client that aborts a stream is charged what was produced, the rest released', async () => {
      const u = await funded(10_000);
      const content = 'slowly [[upstream:chunk-delay=40]]';
      const stream = await u.client.chat.completions.create({
        model: 'anthropic/claude-sonnet-4-5',
        messages: [{ role: 'user', content }],
        stream: true,
        max_tokens: 300,
      });
      let text = '';
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        if (text.length > 8) break; // the client closes the connection
      }
      // The server settles once it notices the closed connection. The hold is taken when the stream
      // starts, so the balance moves before the settle: wait for the settle itself in the ledger.
      await waitFor(async () => (await gw.runtime.billing.ledger.entries(u.sub)).some((e) => e.kind === 'settle'), {
        what: 'the aborted stream settled',
      });
      const balance = await balanceOf(u.token);
      const charged = 10_000 - balance;
      expect(charged).toBeGreaterThanOrEqual(Math.ceil(content.length / 4) + Buffer.byteLength(text));
      const reserved = Math.ceil(content.length / 4) + 300;
      expect(charged).toBeLessThan(reserved + fee(reserved));
    });
  });

  describe('the AI SDK OpenAI-compatible provider against /v1', () => {
    for (const provider of PROVIDERS) {
      it(`${provider}: generateText and streamText`, async () => {
        const u = await funded(10_000);
        const gwProvider = createOpenAICompatible({ name: 'ai-backend', baseURL: gw.url + '/v1', apiKey: u.token, includeUsage: true });
        const g = await generateText({ model: gwProvider(MODELS[provider]), prompt: 'Hello' });
        expect(g.text).toMatch(/^Test reply from/);
        expect(g.usage.outputTokens).toBe(16);
        const s = streamText({ model: gwProvider(MODELS[provider]), prompt: 'Hello' });
        let text = '';
        for await (const d of s.textStream) text += d;
        expect(text).toMatch(/^Test reply from/);
        expect((await s.usage).outputTokens).toBe(16);
        expect(upstream.requests.at(-1)!.apiKey).toBe(SERVER_KEY);
      });
    }
  });

  describe('/v1 shares the rate limits of the other entry points', () => {
    it('maxToolCalls counts /v1 calls like ai.generateText on /rpc; the refusal is an OpenAI 429', async () => {
      const up = await createTestUpstream();
      const limited = await startAiServer(
        up,
        {
          storage: { type: 'memory' },
          mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: true, windowMs: 60_000, maxRequests: 1000, maxToolCalls: 3 } },
        },
        { mode },
      );
      try {
        const adminToken = await tokenFor('rl-admin', { admin: true });
        await creditTokens(limited.url, adminToken, 'rl-user', 100_000, 'k-rl');
        const t = await tokenFor('rl-user');
        const client = new OpenAI({ baseURL: limited.url + '/v1', apiKey: t, maxRetries: 0 });
        await rpcCall(limited.url, t, 'ai.generateText', { content: 'x', systemPrompt: 's' });
        await client.chat.completions.create({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'x' }] });
        await client.chat.completions.create({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'x' }], stream: true });
        const err = (await client.chat.completions
          .create({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'x' }] })
          .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
        expect(err).toBeInstanceOf(OpenAI.RateLimitError);
        expect(err.code).toBe('rate_limited');
        expect(err.headers?.get('retry-after')).toBeTruthy();
      } finally {
        await limited.stop();
        await up.close();
      }
    });
  });
});
