import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { accessDecisionsMade } from '@ai-backend/core/internal';
import {
  createTestUpstream,
  creditTokens,
  mcpClient,
  rpcCall,
  startAiServer,
  tokenFor,
  trpcClient,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';

/**
 * Issue 38: every entry point (/trpc, /rpc, /mcp, /v1) runs one entry sequence (transports'
 * serveEntry) in which access is decided once per call — the request scope keeps the decision
 * and the base middleware reuses it, where it used to decide again (and /v1 a third time for
 * its challenge). Counted with core's decision counter around one call on each entry point.
 */
let upstream: TestUpstream;
let gw: AiServer;
let user: string;

/** Access decisions made while `fn` ran. */
async function decisionsDuring(fn: () => Promise<unknown>): Promise<number> {
  const before = accessDecisionsMade();
  await fn();
  return accessDecisionsMade() - before;
}

beforeAll(async () => {
  upstream = await createTestUpstream({ outputTokens: 8 });
  // Rate limiting on: the tool-call limit runs in the same sequence (and must not decide again).
  gw = await startAiServer(upstream, {
    mcp: {
      auth: { authType: 'jwt', publicTools: ['generateText'] },
      rateLimiting: { enabled: true, maxRequests: 10_000, maxToolCalls: 10_000 },
    },
  });
  const admin = await tokenFor('seq-admin', { admin: true });
  user = await tokenFor('seq-user');
  await creditTokens(gw.url, admin, 'seq-user', 1_000_000, 'k-seq-user');
});
afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
});

const INPUT = { content: 'hi', systemPrompt: 'terse', provider: 'openai', options: { maxTokens: 16 } };

describe('one access decision per call, on every entry point', () => {
  it('/trpc: a single call and each call of a batch', async () => {
    const client = trpcClient(gw.url, user);
    expect(await decisionsDuring(() => client.mcp.echo.query({ message: 'x' }))).toBe(1);
    expect(await decisionsDuring(() => Promise.all([client.mcp.echo.query({ message: 'a' }), client.mcp.ping.query()]))).toBe(2);
  });

  it('/rpc: a single call, and a batch of three', async () => {
    expect(await decisionsDuring(() => rpcCall(gw.url, user, 'ai.generateText', INPUT))).toBe(1);
    const batch = [0, 1, 2].map((id) => ({ jsonrpc: '2.0', id, method: 'mcp.echo', params: { message: String(id) } }));
    const n = await decisionsDuring(async () => {
      const res = await fetch(gw.url + '/rpc', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${user}` },
        body: JSON.stringify(batch),
      });
      expect(((await res.json()) as unknown[]).length).toBe(3);
    });
    // One decision per procedure of the request (the three calls share it: same identity, same procedure).
    expect(n).toBe(1);
  });

  it('/v1: a metered chat completion, a streamed one, an Anthropic message, the model list', async () => {
    const openai = new OpenAI({ baseURL: gw.url + '/v1', apiKey: user, maxRetries: 0 });
    expect(
      await decisionsDuring(() =>
        openai.chat.completions.create({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'x' }] }),
      ),
    ).toBe(1);
    expect(
      await decisionsDuring(async () => {
        const stream = await openai.chat.completions.create({
          model: 'openai/gpt-4.1-mini',
          messages: [{ role: 'user', content: 'x' }],
          stream: true,
        });
        for await (const _ of stream);
      }),
    ).toBe(1);
    const anthropic = new Anthropic({ baseURL: gw.url, authToken: user, maxRetries: 0 });
    expect(
      await decisionsDuring(() =>
        anthropic.messages.create({ model: 'openai/gpt-4.1-mini', max_tokens: 16, messages: [{ role: 'user', content: 'x' }] }),
      ),
    ).toBe(1);
    expect(await decisionsDuring(() => openai.models.list())).toBe(1);
  });

  it('/v1: an anonymous call refused by the access policy is decided once too (the challenge reuses the decision)', async () => {
    const anon = await decisionsDuring(async () => {
      const res = await fetch(gw.url + '/v1/embeddings', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'openai/text-embedding-3-small', input: 'x' }),
      });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer /);
    });
    expect(anon).toBe(1);
  });

  it('/mcp: a tools/call in a 2025 session', async () => {
    const client = await mcpClient(gw.url, user);
    try {
      expect(await decisionsDuring(() => client.callTool({ name: 'echo', arguments: { message: 'x' } }))).toBe(1);
      const metered = await decisionsDuring(async () => {
        const r = await client.callTool({ name: 'generateText', arguments: INPUT });
        expect(r.isError).toBeFalsy();
      });
      expect(metered).toBe(1);
    } finally {
      await client.close();
    }
  });
});
