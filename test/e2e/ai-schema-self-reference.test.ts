/**
 * A structured-output schema that refers to itself without descending into the value
 * (`{"$ref": "#"}`, two `$defs` referring to each other) compiles in Ajv, but checking an
 * answer against it overflows the stack: the call used to go upstream, be charged, and end in
 * a 500 "internal error" (or "Maximum call stack size exceeded" in the message). On every entry
 * point it is now a 400 in that entry point's shape, before any upstream request or charge.
 * Real server, real test upstream, real clients (`openai`, tRPC, JSON-RPC, MCP SDK).
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callVia,
  createTestUpstream,
  creditTokens,
  rpcCall,
  startAiServer,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { LEAK } from './helpers/hostileRoutes.js';

let upstream: TestUpstream;
let gw: AiServer;
let user: string;

const LOOPS: Array<[string, Record<string, unknown>]> = [
  ['$ref to the root', { $ref: '#' }],
  [
    '$defs referring to each other',
    { type: 'object', $ref: '#/$defs/a', $defs: { a: { $ref: '#/$defs/b' }, b: { allOf: [{ $ref: '#/$defs/a' }] } } },
  ],
  ['a property referring to itself', { type: 'object', properties: { x: { $ref: '#/properties/x' } } }],
];

const balance = async () =>
  (await rpcCall<{ virtualTokenBalance: number }>(gw.url, user, 'billing.getTokenBalance')).result!.virtualTokenBalance;

beforeAll(async () => {
  upstream = await createTestUpstream({ outputTokens: 8 });
  gw = await startAiServer(upstream, { storage: { type: 'memory' } });
  user = await tokenFor('schema-loop-user');
  await creditTokens(gw.url, await tokenFor('schema-loop-admin', { admin: true }), 'schema-loop-user', 100_000, 'schema-loop-1');
});
afterAll(async () => {
  await gw.stop();
  await upstream.close();
});

describe.each(LOOPS)('structured output with %s', (_, schema) => {
  it('/v1/chat/completions: a 400 invalid_request_error naming response_format, nothing sent or charged', async () => {
    const [before, sent] = [await balance(), upstream.requests.length];
    const client = new OpenAI({ baseURL: gw.url + '/v1', apiKey: user, maxRetries: 0 });
    const err = await client.chat.completions
      .create({
        model: 'openai/gpt-4.1-mini',
        messages: [{ role: 'user', content: 'answer in JSON' }],
        response_format: { type: 'json_schema', json_schema: { name: 'loop', schema } },
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const e = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect(e.message).toMatch(/refers to itself/);
    expect(e.message).not.toMatch(LEAK);
    expect(upstream.requests.length).toBe(sent);
    expect(await balance()).toBe(before);
  });

  it('/v1/responses: a 400 in the OpenAI error shape, nothing sent or charged', async () => {
    const [before, sent] = [await balance(), upstream.requests.length];
    const res = await fetch(gw.url + '/v1/responses', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${user}` },
      body: JSON.stringify({
        model: 'openai/gpt-4.1-mini',
        input: 'answer in JSON',
        text: { format: { type: 'json_schema', name: 'loop', schema } },
      }),
    });
    const body = (await res.json()) as { error: { type: string; message: string } };
    expect(res.status).toBe(400);
    expect(body.error).toMatchObject({ type: 'invalid_request_error', message: expect.stringMatching(/refers to itself/) });
    expect(upstream.requests.length).toBe(sent);
    expect(await balance()).toBe(before);
  });

  it.each(['trpc', 'rpc', 'mcp'] as const)(
    'ai.generateText over %s: BAD_REQUEST naming output.schema, nothing sent or charged',
    async (entry) => {
      const [before, sent] = [await balance(), upstream.requests.length];
      const out = await callVia(gw, entry, user, 'ai.generateText', {
        provider: 'openai',
        messages: [{ role: 'user', content: 'answer in JSON' }],
        output: { type: 'json', schema },
      });
      expect(out).toMatchObject({ ok: false, code: 'BAD_REQUEST', message: expect.stringMatching(/output\.schema refers to itself/) });
      expect(upstream.requests.length).toBe(sent);
      expect(await balance()).toBe(before);
    },
  );
});

describe('a recursive schema that descends into the value', () => {
  it('still works: a tree answer is validated and returned', async () => {
    const tree = { type: 'object', properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#' } } } };
    const out = await callVia(gw, 'rpc', user, 'ai.generateText', {
      provider: 'openai',
      messages: [{ role: 'user', content: 'answer in JSON' }],
      output: { type: 'json', schema: tree },
    });
    expect(out).toMatchObject({ ok: true });
  });
});
