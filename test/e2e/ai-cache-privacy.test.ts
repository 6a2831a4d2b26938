import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
 * No prompt in a response cache entry (docs/ai.md#response-cache), also where the provider's own
 * answer echoes the request: OpenAI's Responses API repeats `instructions` (the system prompt) in
 * every answer, and a plain /v1/responses call is passed through with that body. The entry keeps
 * the answer without that body, and a hit still gives the answer.
 */
const SECRET = 'SECRET-INSTRUCTIONS-never-in-the-cache-4711';
let upstream: TestUpstream;
let openaiLike: Server;
let calls = 0;
let gw: AiServer;

describe('response cache: no prompt in an entry when the answer echoes it', () => {
  beforeAll(async () => {
    upstream = await createTestUpstream({});
    // Answers POST /v1/responses as OpenAI does: the request's `instructions` are repeated in the answer.
    openaiLike = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => {
        raw += c.toString('utf8');
      });
      req.on('end', () => {
        const body = JSON.parse(raw || '{}') as { instructions?: string; model?: string };
        calls++;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: `resp_${calls}`,
            object: 'response',
            created_at: 1_700_000_000,
            status: 'completed',
            error: null,
            incomplete_details: null,
            instructions: body.instructions ?? null,
            model: body.model,
            output: [
              {
                type: 'message',
                id: `msg_${calls}`,
                status: 'completed',
                role: 'assistant',
                content: [{ type: 'output_text', text: 'Bonjour', annotations: [] }],
              },
            ],
            usage: { input_tokens: 12, output_tokens: 3, total_tokens: 15 },
          }),
        );
      });
    });
    await new Promise<void>((r) => openaiLike.listen(0, '127.0.0.1', () => r()));
    const port = (openaiLike.address() as { port: number }).port;
    const providers = upstream.aiConfig({ apiKey: SERVER_KEY }).providers;
    gw = await startAiServer(
      upstream,
      {
        ai: {
          providers: { ...providers, openai: { baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: SERVER_KEY } } as never,
          cache: { enabled: true },
          passThrough: true,
        },
      },
      {},
    );
  });
  afterAll(async () => {
    await gw?.stop();
    await upstream?.close();
    await new Promise((r) => openaiLike?.close(r));
  });

  it('a passed-through Responses answer repeating the instructions is stored without them; the hit still answers', async () => {
    const admin = await tokenFor('privacy-admin', { admin: true });
    await creditTokens(gw.url, admin, 'privacy-user', 1_000_000, 'privacy-user');
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await tokenFor('privacy-user'), maxRetries: 0 });
    const ask = () =>
      client.responses.create({ model: 'openai/gpt-4.1-nano', instructions: SECRET, input: 'Say hello in French' }).withResponse();
    const miss = await ask();
    expect(miss.response.headers.get('x-ai-backend-cache')).toBe('miss');
    expect(miss.data.output_text).toBe('Bonjour');
    const entries = async () => {
      const keys = (await gw.runtime.shared.keys('aicache:')).filter((k) => !k.startsWith('aicache:bytes:'));
      return (await gw.runtime.shared.getMany(keys)).filter((v) => v !== undefined && v !== null);
    };
    await waitFor(async () => (await entries()).length === 1, { what: 'the entry stored' });
    expect(JSON.stringify(await entries())).not.toContain(SECRET);
    const hit = await ask();
    expect(hit.response.headers.get('x-ai-backend-cache')).toBe('hit');
    expect(hit.data.output_text).toBe('Bonjour');
    expect(calls).toBe(1);
  });
});
