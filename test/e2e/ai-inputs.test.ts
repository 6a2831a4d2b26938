/**
 * AI inputs over every entry point (/trpc, /rpc, MCP tools/call): a model id never changes the
 * upstream URL, blocked models cannot be respelled, and a server prompt never goes to a caller's
 * own key. Real server, real test upstream, real clients.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callVia,
  createTestUpstream,
  creditTokens,
  SERVER_KEY,
  startAiServer,
  tokenFor,
  type AiServer,
  type Entry,
  type TestUpstream,
} from './helpers/aiGateway.js';

let upstream: TestUpstream;
let gw: AiServer;
let user: string;
const ENTRIES: Entry[] = ['trpc', 'rpc', 'mcp'];

beforeAll(async () => {
  upstream = await createTestUpstream();
  const { providers } = upstream.aiConfig({ apiKey: SERVER_KEY });
  gw = await startAiServer(upstream, {
    storage: { type: 'memory' },
    ai: { providers: { ...providers, google: { ...providers.google, blockedModels: ['gemini-2.5-pro'] } } },
  });
  user = await tokenFor('ai-inputs-user');
  await creditTokens(gw.url, await tokenFor('ai-inputs-admin', { admin: true }), 'ai-inputs-user', 100_000, 'ai-inputs-1');
});
afterAll(async () => {
  await gw.stop();
  await upstream.close();
});

describe('AI inputs on every entry point', () => {
  it('the Google path-traversal model id is refused before any request (the server key never travels)', async () => {
    const before = upstream.requests.length;
    for (const entry of ENTRIES) {
      for (const model of ['../../../../internal/admin/export?', 'x/../models/gemini-2.5-pro']) {
        const out = await callVia(gw, entry, user, 'ai.generateText', {
          content: 'hi',
          systemPrompt: 's',
          provider: 'google',
          options: { model },
        });
        expect(out, `${entry} ${model}`).toMatchObject({ ok: false, code: 'BAD_REQUEST' });
      }
      const respelled = await callVia(gw, entry, user, 'ai.generateText', {
        content: 'hi',
        systemPrompt: 's',
        provider: 'google',
        options: { model: 'models/gemini-2.5-pro' },
      });
      expect(respelled).toMatchObject({ ok: false, code: 'FORBIDDEN' });
    }
    expect(upstream.requests.length).toBe(before);
  });

  it("a named server prompt is refused with the caller's own key, anonymous or signed in", async () => {
    const before = upstream.requests.length;
    for (const entry of ['trpc', 'rpc'] as const) {
      for (const token of [null, user]) {
        const out = await callVia(gw, entry, token, 'ai.generateText', {
          content: 'hi',
          systemPrompt: '@support',
          provider: 'openai',
          apiKey: 'sk-caller-own-key-0001',
        });
        expect(out, `${entry} ${token ? 'user' : 'anonymous'}`).toMatchObject({ ok: false, code: 'FORBIDDEN' });
      }
    }
    const viaMcp = await callVia(gw, 'mcp', user, 'ai.generateText', {
      content: 'hi',
      systemPrompt: '@support',
      provider: 'openai',
      apiKey: 'sk-caller-own-key-0001',
    });
    expect(viaMcp).toMatchObject({ ok: false, code: 'FORBIDDEN' });
    expect(upstream.requests.length).toBe(before);
  });
});
