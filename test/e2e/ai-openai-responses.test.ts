// @every-node: CI runs this file on every Node version it tests (docs/testing.md, "CI: phases and times").
import { describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { SYSTEM_PROMPT } from './helpers/aiGateway.js';
import { fee, CHAT_MODELS, rejectionOf, sixProviderSuite } from './helpers/sixProviders.js';
import { describeV1Matrix } from './helpers/describeMatrix.js';

/**
 * POST /v1/responses driven by the official `openai` client's responses.create / responses.stream,
 * unchanged, for the four built-ins and two named providers (openai-compatible and the AI SDK's
 * Mistral package): text, streaming events, tools, structured output, exact balances, errors.
 */
const MODELS = CHAT_MODELS;

describeV1Matrix('/v1/responses', (mode, path) => {
  const suite = sixProviderSuite(mode, 'rs-user', { outputTokens: 16 }, path);
  const { balanceOf } = suite;
  async function funded(tokens: number) {
    const token = await suite.fundedToken(tokens);
    return { token, client: new OpenAI({ baseURL: suite.gw.url + '/v1', apiKey: token, maxRetries: 0 }) };
  }

  describe('openai client responses.create against /v1/responses', () => {
    for (const provider of Object.keys(MODELS)) {
      it(`${provider}: text with instructions, metered exactly`, async () => {
        const u = await funded(10_000);
        const r = await u.client.responses.create({
          model: MODELS[provider]!,
          instructions: '@support',
          input: 'Hello',
          max_output_tokens: 64,
        });
        expect(r.object).toBe('response');
        expect(r.status).toBe('completed');
        expect(r.output_text).toMatch(/^Test reply from/);
        expect(suite.upstream.requests.at(-1)!).toMatchObject({ provider, system: SYSTEM_PROMPT });
        expect(r.usage!.output_tokens).toBe(16);
        const used = r.usage!.total_tokens;
        expect(used).toBe(r.usage!.input_tokens + 16);
        expect(await balanceOf(u.token)).toBe(10_000 - used - fee(used));
        expect(JSON.stringify(r)).not.toContain(SYSTEM_PROMPT);
      });

      it(`${provider}: responses.stream assembles the events, usage on response.completed`, async () => {
        const u = await funded(10_000);
        const stream = u.client.responses.stream({
          model: MODELS[provider]!,
          input: [{ role: 'user', content: 'Stream it' }],
          max_output_tokens: 64,
        });
        let text = '';
        stream.on('response.output_text.delta', (e) => (text += e.delta));
        const final = await stream.finalResponse();
        expect(text).toMatch(/^Test reply from/);
        expect(final.output_text).toBe(text);
        expect(final.usage!.output_tokens).toBe(16);
        const used = final.usage!.total_tokens;
        expect(await balanceOf(u.token)).toBe(10_000 - used - fee(used));
      });
    }

    // The answer is the upstream's own body on the pass-through path: only the SDK path writes usage.
    it.runIf(path === 'sdk')(
      'an upstream that reports no usage: total_tokens is what the call was charged, plain and streamed',
      async () => {
        for (const stream of [false, true]) {
          const u = await funded(10_000);
          const ask = { model: MODELS.local!, input: `no usage ${stream} [[upstream:no-usage]]`, max_output_tokens: 64 };
          const r = stream ? await u.client.responses.stream(ask).finalResponse() : await u.client.responses.create(ask);
          expect(r.output_text).toMatch(/^Test reply from/);
          const used = r.usage!.total_tokens;
          expect(used).toBeGreaterThan(0);
          expect(await balanceOf(u.token)).toBe(10_000 - used - fee(used));
        }
      },
    );

    it('function tools: a function_call, then function_call_output sent back', async () => {
      const u = await funded(10_000);
      const tools = [
        {
          type: 'function' as const,
          name: 'get_weather',
          description: 'weather',
          strict: false,
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      ];
      const r = await u.client.responses.create({ model: MODELS.local!, tools, input: 'Weather in Paris?' });
      const call = r.output.find((o) => o.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
      expect(call).toMatchObject({ name: 'get_weather' });
      expect(JSON.parse(call.arguments)).toEqual({ city: 'test' });
      const r2 = await u.client.responses.create({
        model: MODELS.mist!,
        tools,
        input: [
          { role: 'user', content: 'Weather in Paris?' },
          call,
          { type: 'function_call_output', call_id: call.call_id, output: '21C' },
        ],
      });
      expect(r2.output_text).toContain('[tool result received]');
    });

    it('parallel function calls reach an OpenAI Chat target as one assistant message, their outputs right after it', async () => {
      // Chat Completions refuses an assistant message whose tool calls are not all answered by the
      // tool messages that follow it: the Responses items of one turn must not be split.
      const u = await funded(10_000);
      const tools = [{ type: 'function' as const, name: 'w', strict: false, parameters: { type: 'object', properties: {} } }];
      for (const model of [MODELS.local!, MODELS.openrouter!]) {
        const r = await u.client.responses.create({
          model,
          tools,
          input: [
            { role: 'user', content: 'Oslo and Rome?' },
            { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'checking', annotations: [] }] } as never,
            { type: 'function_call', call_id: 'c1', name: 'w', arguments: '{"city":"Oslo"}' },
            { type: 'function_call', call_id: 'c2', name: 'w', arguments: '{"city":"Rome"}' },
            { type: 'function_call_output', call_id: 'c1', output: 'cold' },
            { type: 'function_call_output', call_id: 'c2', output: 'warm' },
          ],
        });
        expect(r.output_text).toContain('[tool result received]');
        const sent = (suite.upstream.requests.at(-1)!.body as { messages: Array<Record<string, unknown>> }).messages;
        expect(sent.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool']);
        expect(sent[1]!.content).toBe('checking');
        expect((sent[1]!.tool_calls as Array<{ id: string }>).map((c) => c.id)).toEqual(['c1', 'c2']);
        expect(sent.slice(2).map((m) => m.tool_call_id)).toEqual(['c1', 'c2']);
      }
    });

    it("a Codex-style next turn carrying the model's reasoning item: sent back to OpenAI as it came, dropped for another provider", async () => {
      const u = await funded(10_000);
      const reasoning = { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'gAAAAB-opaque' };
      for (const model of [MODELS.openai!, MODELS.anthropic!]) {
        const r = await u.client.responses.create({
          model,
          store: false,
          input: [
            { role: 'user', content: 'Think first' },
            reasoning as never,
            { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'thought', annotations: [] }] } as never,
            { role: 'user', content: 'Now answer' },
          ],
        });
        expect(r.output_text).toMatch(/^Test reply from/);
        const sent = JSON.stringify(suite.upstream.requests.at(-1)!.body);
        // On the pass-through path OpenAI receives the body as sent; a translation has no place for it.
        if (path === 'pass-through' && model === MODELS.openai) expect(sent).toContain('gAAAAB-opaque');
        else expect(sent).not.toContain('gAAAAB-opaque');
      }
    });

    it('structured output through text.format', async () => {
      const u = await funded(10_000);
      const schema = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: false };
      const r = await u.client.responses.create({
        model: MODELS.openai!,
        input: 'A person',
        text: { format: { type: 'json_schema', name: 'person', schema, strict: true } },
      });
      expect(JSON.parse(r.output_text)).toEqual({ name: 'test' });
    });

    it('errors are OpenAI-shaped: upstream 429 with Retry-After, unknown model, previous_response_id, no credit', async () => {
      const u = await funded(10_000);
      const err = (p: Promise<unknown>) => rejectionOf<InstanceType<typeof OpenAI.APIError>>(p);
      const limited = await err(u.client.responses.create({ model: MODELS.local!, input: 'x [[upstream:429:retry=3]]' }));
      expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
      expect(limited.headers?.get('retry-after')).toBe('3');
      expect(limited.error).toMatchObject({ type: 'rate_limit_error' });
      const unknown = await err(u.client.responses.create({ model: 'nope/x', input: 'x' }));
      expect(unknown).toBeInstanceOf(OpenAI.BadRequestError);
      const prev = await err(u.client.responses.create({ model: MODELS.openai!, input: 'x', previous_response_id: 'resp_1' }));
      expect(prev.status).toBe(400);
      expect(prev.param).toBe('previous_response_id');
      const poor = await funded(1);
      const paid = await err(poor.client.responses.create({ model: MODELS.openai!, input: 'x' }));
      expect(paid.status).toBe(402);
    });

    it('an upstream that fails mid-stream ends the stream with an error event in sequence; charged at most the hold', async () => {
      const u = await funded(10_000);
      const stream = await u.client.responses.create({
        model: MODELS.openai!,
        input: 'x [[upstream:drop]]',
        stream: true,
        max_output_tokens: 64,
      });
      const events: OpenAI.Responses.ResponseStreamEvent[] = [];
      for await (const e of stream) events.push(e);
      expect(events[0]!.type).toBe('response.created');
      expect(events.map((e) => e.type)).not.toContain('response.completed');
      const last = events.at(-1)!;
      expect(last).toMatchObject({ type: 'error', code: 'upstream_error', message: expect.stringMatching(/lost/) });
      expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
      const charged = 10_000 - (await balanceOf(u.token));
      expect(charged).toBeGreaterThan(0);
      expect(charged).toBeLessThan(300);
    });
  });
});
