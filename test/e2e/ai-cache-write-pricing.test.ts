import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  SERVER_KEY,
  createTestUpstream,
  creditTokens,
  rpcCall,
  startAiServer,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';

/**
 * Anthropic bills a prompt-cache write above the input price (1.25 times for the 5-minute cache,
 * twice for the hour's), and a /v1/messages body passed through keeps its `cache_control`. Such a
 * call is recorded, and counted against a money budget, at what Anthropic bills (docs/billing.md
 * "Money cost"), and its hold's cost bound counts its input twice. Before, the writes were priced
 * as plain input: a key or user could spend up to twice their money budget on input by asking for
 * the hour's cache on every call. Reads, billed at a tenth of the input price, are priced so: a
 * Claude Code session reads most of its input from the cache, and priced as plain input it was
 * recorded (and spent money budgets) at several times its cost.
 */
const INPUT = 1_000;
const WRITES_1H = 50_000;
const READS = 50_000;
const OUTPUT = 10;

let upstream: TestUpstream;
let anthropic: http.Server;
let gw: AiServer;
/** The same, with the response cache on: a hit is charged half the price the original call was recorded at. */
let cachingGw: AiServer;
let admin: string;
let users = 0;

beforeAll(async () => {
  upstream = await createTestUpstream();
  // An Anthropic that reports an hour's cache write for every call.
  anthropic = http.createServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const body = JSON.parse(raw || '{}') as { model: string; messages?: Array<{ content?: unknown }> };
    // A prompt saying "from-cache" is answered as a cache hit (reads, no writes).
    const hit = JSON.stringify(body.messages ?? []).includes('from-cache');
    const usage = hit
      ? { input_tokens: INPUT, cache_creation_input_tokens: 0, cache_read_input_tokens: READS, output_tokens: OUTPUT }
      : {
          input_tokens: INPUT,
          cache_creation_input_tokens: WRITES_1H,
          cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: WRITES_1H },
          cache_read_input_tokens: 0,
          output_tokens: OUTPUT,
        };
    const answer = { id: 'msg_1', type: 'message', role: 'assistant', model: body.model, content: [{ type: 'text', text: 'ok' }] };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...answer, stop_reason: 'end_turn', usage }));
  });
  await new Promise<void>((r) => anthropic.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(anthropic.address() as AddressInfo).port}/v1`;
  gw = await startAiServer(
    upstream,
    {
      admin: { users: ['cachew-admin'] },
      ai: { providers: { ...upstream.aiConfig({ apiKey: SERVER_KEY }).providers, anthropic: { baseUrl, apiKey: SERVER_KEY } } },
    },
    { path: 'pass-through' },
  );
  cachingGw = await startAiServer(
    upstream,
    {
      admin: { users: ['cachew-admin'] },
      ai: {
        providers: { ...upstream.aiConfig({ apiKey: SERVER_KEY }).providers, anthropic: { baseUrl, apiKey: SERVER_KEY } },
        cache: { enabled: true, chargeRatio: 0.5 },
      },
    },
    { path: 'pass-through' },
  );
  admin = await tokenFor('cachew-admin', { admin: true });
});
afterAll(async () => {
  await gw?.stop();
  await cachingGw?.stop();
  await upstream?.close();
  await new Promise((r) => anthropic?.close(r));
});

async function user(budgetUsd?: number): Promise<{ sub: string; token: string }> {
  const sub = `cachew-${++users}`;
  await creditTokens(gw.url, admin, sub, 1_000_000, `cachew-${sub}`);
  if (budgetUsd !== undefined) {
    const set = await rpcCall(gw.url, admin, 'admin.setBudget', { userId: sub, period: 'daily', usd: budgetUsd });
    expect(set.result, set.text).toBeDefined();
  }
  return { sub, token: await tokenFor(sub) };
}

const messages = (token: string, text: string, cache: boolean, at = gw) =>
  fetch(`${at.url}/v1/messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'anthropic/claude-sonnet-4-5',
      max_tokens: 16,
      system: [{ type: 'text', text: 'Be brief.', ...(cache ? { cache_control: { type: 'ephemeral', ttl: '1h' } } : {}) }],
      messages: [{ role: 'user', content: text }],
    }),
  });

describe("Anthropic's prompt-cache writes against the money figures", () => {
  it('a call that wrote the hour cache is recorded at twice the input price for the written tokens', async () => {
    const u = await user();
    const res = await messages(u.token, 'hello', true);
    expect(res.status, await res.clone().text()).toBe(200);
    await res.text();
    const history = await rpcCall(gw.url, u.token, 'billing.getUsageHistory', { limit: 1 });
    // claude-sonnet-4-5: $3 input, $15 output per million; the hour's writes at $6.
    expect(history.result.usage[0].estimatedCostUsd).toBeCloseTo((INPUT * 3 + WRITES_1H * 6 + OUTPUT * 15) / 1_000_000, 9);
  });

  it('a call that read from the cache is recorded at a tenth of the input price for the read tokens', async () => {
    const u = await user();
    const res = await messages(u.token, 'from-cache', true);
    expect(res.status, await res.clone().text()).toBe(200);
    await res.text();
    const history = await rpcCall(gw.url, u.token, 'billing.getUsageHistory', { limit: 1 });
    // Reads at $0.30 per million (a tenth of $3); the tokens charged still count every read token.
    expect(history.result.usage[0].estimatedCostUsd).toBeCloseTo((INPUT * 3 + READS * 0.3 + OUTPUT * 15) / 1_000_000, 9);
    expect(history.result.usage[0].tokensUsed).toBeGreaterThanOrEqual(INPUT + READS + OUTPUT);
  });

  it("a response-cache hit of such a call is charged its ratio of the price the call was recorded at (the reads' discount included)", async () => {
    const sub = `cachew-hit-${++users}`;
    await creditTokens(cachingGw.url, admin, sub, 1_000_000, `cachew-${sub}`);
    const token = await tokenFor(sub);
    for (const expected of ['miss', 'hit']) {
      const res = await messages(token, 'from-cache again', false, cachingGw);
      expect(res.status, await res.clone().text()).toBe(200);
      expect(res.headers.get('x-ai-backend-cache')).toBe(expected);
      await res.text();
    }
    const history = await rpcCall(cachingGw.url, token, 'billing.getUsageHistory', { limit: 2 });
    const [hit, miss] = history.result.usage as Array<{ estimatedCostUsd: number }>;
    const recorded = (INPUT * 3 + READS * 0.3 + OUTPUT * 15) / 1_000_000;
    expect(miss!.estimatedCostUsd).toBeCloseTo(recorded, 9);
    // Recomputed from plain input and output, the hit's price was (INPUT + READS) * $3: five times this.
    expect(hit!.estimatedCostUsd).toBeCloseTo(recorded * 0.5, 9);
  });

  it("a body asking for caching holds its input at the cache write's price: a budget that covers it once refuses it", async () => {
    // About 100k tokens of input: $0.30 at the input price, $0.60 at the hour cache's.
    const long = 'a'.repeat(100_000);
    const plain = await user(0.45);
    const ok = await messages(plain.token, long, false);
    expect(ok.status, await ok.clone().text()).toBe(200);
    await ok.text();
    const cached = await user(0.45);
    const refused = await messages(cached.token, long, true);
    expect(refused.status).toBe(402);
    expect(await refused.text()).toMatch(/budget/i);
  });
});
