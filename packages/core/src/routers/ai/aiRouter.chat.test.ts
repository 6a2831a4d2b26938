import { afterEach, describe, expect, it, vi } from 'vitest';
import { alice, createAiHarness, rejection, type AiHarness } from './__tests__/aiHarness.js';

let h: AiHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const USER = [{ role: 'user' as const, content: 'hi' }];

describe('chat input: schemas the providers would refuse are refused here', () => {
  it('a tool or output schema whose root is not an object is INVALID_PARAMS before any upstream request', async () => {
    h = await createAiHarness();
    await h.credit(alice.sub, 1_000_000);
    const cases = [
      { tools: [{ name: 'f', parameters: { type: 'string' } }], field: 'tools.0.parameters' },
      { output: { type: 'json' as const, schema: { type: 'array', items: { type: 'string' } } }, field: 'output.schema' },
    ];
    for (const { field, ...extra } of cases) {
      for (const run of [h.caller(alice).ai.generateText, h.caller(alice).ai.streamText]) {
        const err = await rejection(run({ provider: 'anthropic', messages: USER, ...extra }));
        expect(err.appCode).toBe('INVALID_PARAMS');
        expect(err.message).toContain(`${field} must describe an object`);
        expect(err.details).toMatchObject({ reason: 'invalid_schema', field });
      }
    }
    expect(h.upstream.requests).toHaveLength(0);
  });

  it('a tool schema without a root type is sent as an object schema (Anthropic requires input_schema.type)', async () => {
    h = await createAiHarness();
    await h.credit(alice.sub, 1_000_000);
    const r = await h.caller(alice).ai.generateText({
      provider: 'anthropic',
      messages: USER,
      tools: [{ name: 'f', parameters: { properties: { a: { type: 'string' } } } }],
    });
    expect(r.data.toolCalls).toEqual([{ toolCallId: expect.any(String), toolName: 'f', input: { a: 'test' } }]);
    expect(h.upstream.requests.at(-1)!.extras!.tools).toEqual([
      { name: 'f', schema: { type: 'object', properties: { a: { type: 'string' } } } },
    ]);
  });
});

describe('chat input: the hold is an upper bound of what the provider reports', () => {
  it("covers the provider's own tool-use system prompt when tools or structured output are sent", async () => {
    // Anthropic adds a tool-use system prompt (346 tokens on Claude 4.x) to every request with tools.
    h = await createAiHarness({}, { countInputTokens: (system, content) => 346 + Math.ceil((system.length + content.length) / 4) });
    await h.credit(alice.sub, 1_000_000);
    // A signed-in caller's hold is decided and drawn in one transaction (decideAndReserve).
    const reserve = vi.spyOn(h.runtime.billing, 'decideAndReserve');
    const calls = [
      { tools: [{ name: 'f', parameters: { type: 'object' } }] },
      { output: { type: 'json' as const, schema: { type: 'object', properties: { a: { type: 'string' } } } } },
    ];
    for (const extra of calls) {
      for (const run of [h.caller(alice).ai.generateText, h.caller(alice).ai.streamText]) {
        const before = reserve.mock.calls.length;
        let r = await run({ provider: 'anthropic', messages: USER, options: { maxTokens: 16 }, ...extra });
        if (Symbol.asyncIterator in r) for await (const e of r) if (e.type === 'finish') r = e.result;
        const used = (r as { tokenUsage: { tokensUsed: number } }).tokenUsage.tokensUsed;
        expect(reserve.mock.calls.length).toBe(before + 1);
        expect(used).toBeGreaterThan(346);
        expect(reserve.mock.calls.at(-1)![0].tokens).toBeGreaterThanOrEqual(used);
      }
    }
  });
});

describe('chat input: structured output in strict mode only where OpenAI takes the schema', () => {
  it('a schema OpenAI strict mode refuses (open object, optional property, minLength) goes non-strict; a closed one strict', async () => {
    h = await createAiHarness();
    await h.credit(alice.sub, 1_000_000);
    const loose = [
      { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
      {
        type: 'object',
        properties: { name: { type: 'string' }, age: { type: 'integer' } },
        required: ['name'],
        additionalProperties: false,
      },
      { type: 'object', properties: { name: { type: 'string', minLength: 1 } }, required: ['name'], additionalProperties: false },
      {
        type: 'object',
        properties: { tags: { type: 'array', items: { type: 'object', properties: { t: { type: 'string' } } } } },
        required: ['tags'],
        additionalProperties: false,
      },
    ];
    const closed = {
      type: 'object',
      properties: {
        name: { type: 'string', enum: ['a', 'b'] },
        tags: {
          type: 'array',
          items: { type: 'object', properties: { t: { type: 'string' } }, required: ['t'], additionalProperties: false },
        },
      },
      required: ['name', 'tags'],
      additionalProperties: false,
    };
    const strictOf = (body: Record<string, any>) => body.text?.format?.strict ?? body.response_format?.json_schema?.strict;
    for (const provider of ['openai', 'openrouter'] as const) {
      for (const [schema, strict] of [...loose.map((s) => [s, false] as const), [closed, true] as const]) {
        for (const run of [h.caller(alice).ai.generateText, h.caller(alice).ai.streamText]) {
          let r = await run({ provider, messages: USER, output: { type: 'json', schema } });
          if (Symbol.asyncIterator in r) for await (const e of r) if (e.type === 'finish') r = e.result;
          expect((r as { data: { object?: unknown } }).data.object).toBeDefined();
          expect(strictOf(h.upstream.requests.at(-1)!.body!), `${provider} ${JSON.stringify(schema)}`).toBe(strict);
        }
      }
    }
  });
});
