import { afterAll, beforeAll, expect, it } from 'vitest';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import {
  createTestUpstream,
  creditTokens,
  rpcCall,
  startAiServer,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { describeV1Matrix } from './helpers/describeMatrix.js';

/**
 * The sampling fields a client sets reach the provider on both paths (docs/ai.md): OpenAI's `stop`
 * (a string or a list), `top_p` and `seed`, Anthropic's `stop_sequences` and `top_p`, also when the
 * call is translated into another provider's format (the SDK path), and the procedures take them
 * as `options.topP`, `options.stopSequences`, `options.seed`. The SDK path had dropped them
 * silently: an app's stop sequence never reached the model.
 */
let upstream: TestUpstream;
let gw: AiServer;
let token: string;

describeV1Matrix('/v1 sampling fields', (mode, path) => {
  beforeAll(async () => {
    upstream = await createTestUpstream({ outputTokens: 8 });
    gw = await startAiServer(upstream, {}, { mode, path });
    await creditTokens(gw.url, await tokenFor('sampling-admin', { admin: true }), 'sampling-user', 100_000, 'k-sampling');
    token = await tokenFor('sampling-user');
  });
  afterAll(async () => {
    await gw.stop();
    await upstream.close();
  });

  const lastBody = () => upstream.requests.at(-1)!.body!;

  it('Anthropic stop_sequences and top_p reach Anthropic', async () => {
    const client = new Anthropic({ baseURL: gw.url, apiKey: token, maxRetries: 0 });
    // `top_p` is in the Messages API but not in this client version's types.
    const params = {
      model: 'anthropic/claude-sonnet-4-5',
      max_tokens: 16,
      stop_sequences: ['END', '###'],
      top_p: 0.5,
      messages: [{ role: 'user' as const, content: 'hi' }],
    };
    await client.messages.create(params as Anthropic.MessageCreateParamsNonStreaming);
    expect(lastBody()).toMatchObject({ stop_sequences: ['END', '###'], top_p: 0.5 });
  });

  it('OpenAI stop (a string) and top_p reach Anthropic in its own fields', async () => {
    const client = new OpenAI({ baseURL: gw.url + '/v1', apiKey: token, maxRetries: 0 });
    await client.chat.completions.create({
      model: 'anthropic/claude-sonnet-4-5',
      max_tokens: 16,
      stop: 'END',
      top_p: 0.25,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(lastBody()).toMatchObject({ stop_sequences: ['END'], top_p: 0.25 });
  });

  it('the procedures take them too', async () => {
    const r = await rpcCall(gw.url, token, 'ai.generateText', {
      content: 'hi',
      systemPrompt: 'Be brief.',
      model: 'anthropic/claude-sonnet-4-5',
      options: { maxTokens: 16, topP: 0.75, stopSequences: ['STOP'] },
    });
    expect(r.error).toBeUndefined();
    expect(lastBody()).toMatchObject({ stop_sequences: ['STOP'], top_p: 0.75 });
    const tooMany = await rpcCall(gw.url, token, 'ai.generateText', {
      content: 'hi',
      systemPrompt: 'Be brief.',
      options: { stopSequences: Array.from({ length: 17 }, (_, i) => `s${i}`) },
    });
    expect(tooMany.error?.code).toBe(-32602);
  });
});
