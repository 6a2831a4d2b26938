import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import {
  createTestUpstream,
  creditTokens,
  SERVER_KEY,
  startAiServer,
  tokenFor,
  waitFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';

/**
 * A /v1 cache hit gives the caller what the miss gave (docs/ai.md#response-cache). On the
 * pass-through path a plain answer is the provider's own body, with fields our encoding does not
 * hold: Anthropic thinking blocks and `stop_sequence`, OpenAI logprobs and `system_fingerprint`.
 * An upstream here answers with them; the hit, through the official clients, is the same answer.
 */
interface Rich {
  server: http.Server;
  url: string;
  /** Generation requests received. */
  calls: number;
}

let answers = 0;
/** An Anthropic Messages answer with a thinking block, stopped by a stop sequence. */
const messagesAnswer = (model: string) => ({
  id: `msg_upstream_${++answers}`,
  type: 'message',
  role: 'assistant',
  model,
  content: [
    { type: 'thinking', thinking: 'The user wants a short answer.', signature: 'sig-0123' },
    { type: 'text', text: 'A short answer' },
  ],
  stop_reason: 'stop_sequence',
  stop_sequence: 'END',
  usage: { input_tokens: 12, output_tokens: 9, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
});
/** A Chat Completions answer with logprobs. */
const chatAnswer = (model: string) => ({
  id: `chatcmpl-upstream-${++answers}`,
  object: 'chat.completion',
  created: 1_700_000_000,
  model,
  system_fingerprint: 'fp_rich',
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: 'Hi', refusal: null },
      logprobs: { content: [{ token: 'Hi', logprob: -0.25, bytes: [72, 105], top_logprobs: [] }], refusal: null },
      finish_reason: 'stop',
    },
  ],
  usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 },
});

async function startRich(): Promise<Rich> {
  const rich = { calls: 0 } as Rich;
  rich.server = http.createServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const body = JSON.parse(raw || '{}') as { model: string };
    const answer =
      req.url === '/v1/messages' ? messagesAnswer(body.model) : req.url === '/v1/chat/completions' ? chatAnswer(body.model) : null;
    if (!answer) {
      res.writeHead(404).end();
      return;
    }
    rich.calls++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
  });
  await new Promise<void>((r) => rich.server.listen(0, '127.0.0.1', r));
  rich.url = `http://127.0.0.1:${(rich.server.address() as AddressInfo).port}`;
  return rich;
}

let upstream: TestUpstream;
let rich: Rich;
let gw: AiServer;
let admin: string;
let users = 0;

describe('a /v1 cache hit replays the passed-through answer it was stored from', () => {
  beforeAll(async () => {
    upstream = await createTestUpstream();
    rich = await startRich();
    const at = { baseUrl: `${rich.url}/v1`, apiKey: SERVER_KEY };
    gw = await startAiServer(
      upstream,
      {
        ai: { providers: { ...upstream.aiConfig({ apiKey: SERVER_KEY }).providers, anthropic: at, openai: at }, cache: { enabled: true } },
      },
      { path: 'pass-through' },
    );
    admin = await tokenFor('fidelity-admin', { admin: true });
  });
  afterAll(async () => {
    await gw.stop();
    await upstream.close();
    await new Promise((r) => rich.server.close(r));
  });

  async function token(): Promise<string> {
    const sub = `fidelity-${++users}`;
    await creditTokens(gw.url, admin, sub, 100_000, `fidelity-${sub}`);
    return tokenFor(sub);
  }

  /** Ask until the cache serves (the entry is stored as the miss is answered). */
  const untilHit = <T extends { response: Response }>(ask: () => Promise<T>) =>
    waitFor(async () => {
      const r = await ask();
      return r.response.headers.get('x-ai-backend-cache') === 'hit' ? r : undefined;
    });

  it('Anthropic Messages: the thinking block, stop_reason and stop_sequence, usage and id come back on a hit', async () => {
    const client = new Anthropic({ baseURL: gw.url, authToken: await token(), apiKey: null, maxRetries: 0 });
    const ask = () =>
      client.messages
        .create({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'think first' }] })
        .withResponse();
    const miss = await ask();
    expect(miss.response.headers.get('x-ai-backend-cache')).toBe('miss');
    expect(miss.data.content[0]).toMatchObject({ type: 'thinking', signature: 'sig-0123' });
    const calls = rich.calls;
    const hit = await untilHit(ask);
    expect(rich.calls - calls).toBeLessThanOrEqual(1);
    const before = rich.calls;
    // The upstream's own answer, its id included (a miss before the entry landed stored its own id).
    expect({ ...hit.data, id: '' }).toEqual({ ...miss.data, id: '' });
    expect(hit.data.id).toMatch(/^msg_upstream_/);
    expect(hit.response.headers.get('x-ai-backend-path')).toBe('pass-through');
    expect(hit.response.headers.get('x-ai-backend-request-id')).not.toBe(miss.response.headers.get('x-ai-backend-request-id'));
    expect(hit.response.headers.get('x-ai-backend-tokens-charged')).toBe('0');
    expect(rich.calls).toBe(before);
    // A stream of the same call is served the entry in our encoding: the stop sequence with it.
    const streamed = await client.messages
      .stream({ model: 'anthropic/claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'think first' }] })
      .finalMessage();
    expect(streamed).toMatchObject({
      content: [{ type: 'text', text: 'A short answer' }],
      stop_reason: 'stop_sequence',
      stop_sequence: 'END',
    });
    expect(rich.calls).toBe(before);
  });

  it('OpenAI Chat: logprobs and system_fingerprint come back on a hit', async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await token(), maxRetries: 0 });
    const ask = () =>
      client.chat.completions
        .create({ model: 'openai/gpt-4.1-mini', logprobs: true, messages: [{ role: 'user', content: 'with logprobs' }] })
        .withResponse();
    const miss = await ask();
    expect(miss.response.headers.get('x-ai-backend-cache')).toBe('miss');
    expect(miss.data.choices[0]!.logprobs?.content?.[0]).toMatchObject({ token: 'Hi', logprob: -0.25 });
    const hit = await untilHit(ask);
    expect({ ...hit.data, id: '' }).toEqual({ ...miss.data, id: '' });
    expect(hit.response.headers.get('x-ai-backend-path')).toBe('pass-through');
  });
});

describe('a /v1 cache hit on the SDK path keeps the stop sequence the answer stopped on', () => {
  let sdkUpstream: TestUpstream;
  let sdkGw: AiServer;
  let sdkAdmin: string;
  beforeAll(async () => {
    sdkUpstream = await createTestUpstream();
    sdkGw = await startAiServer(sdkUpstream, { ai: { cache: { enabled: true } } }, { path: 'sdk' });
    sdkAdmin = await tokenFor('fidelity-sdk-admin', { admin: true });
  });
  afterAll(async () => {
    await sdkGw.stop();
    await sdkUpstream.close();
  });

  it('Anthropic target: the miss and the plain and streamed hits say stop_sequence, with the sequence', async () => {
    const sub = `fidelity-sdk-${++users}`;
    await creditTokens(sdkGw.url, sdkAdmin, sub, 100_000, `fidelity-${sub}`);
    const client = new Anthropic({ baseURL: sdkGw.url, authToken: await tokenFor(sub), apiKey: null, maxRetries: 0 });
    const body = {
      model: 'anthropic/claude-sonnet-4-5',
      max_tokens: 64,
      stop_sequences: ['from'],
      messages: [{ role: 'user' as const, content: 'stop early' }],
    };
    const stopped = { content: [{ type: 'text', text: 'Test reply ' }], stop_reason: 'stop_sequence', stop_sequence: 'from' };
    const miss = await client.messages.create(body).withResponse();
    expect(miss.response.headers.get('x-ai-backend-cache')).toBe('miss');
    expect(miss.data).toMatchObject(stopped);
    const hit = await waitFor(async () => {
      const r = await client.messages.create(body).withResponse();
      return r.response.headers.get('x-ai-backend-cache') === 'hit' ? r : undefined;
    });
    expect(hit.data).toMatchObject(stopped);
    const calls = sdkUpstream.requests.length;
    expect(await client.messages.stream(body).finalMessage()).toMatchObject(stopped);
    expect(sdkUpstream.requests.length).toBe(calls);
  });
});
