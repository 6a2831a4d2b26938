/**
 * Limits apply to MCP gateway calls as to any tool call (docs/mcp-gateway.md, "Pricing and
 * limits"): a priced upstream tool (server-everything's echo over Streamable HTTP) spends the
 * caller's platform tokens and daily budget and is refused with 402 when they run out; through an API key it
 * spends the key's budget and counts against the key's requests per minute; every call counts
 * against the caller's `mcp.rateLimiting.maxToolCalls`. Each refusal is the error of the rule that
 * refused it, on /rpc (appCode and details) and on /mcp (a tool error that says so).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestUpstream,
  creditTokens,
  mcpClient,
  rpcCall,
  startAiServer,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { startEverythingHttp, waitForUpstreams } from './helpers/mcpUpstreams.js';

const PRICE = 100;
/** What a call takes from the caller's balance: the price plus the helpers' 10 % platform fee (key budgets count tokens without it). */
const CHARGED = 110;
const MAX_TOOL_CALLS = 6;

let upstream: TestUpstream;
let web: Awaited<ReturnType<typeof startEverythingHttp>>;
let gw: AiServer;
let admin: string;
const run = randomUUID().slice(0, 8);

beforeAll(async () => {
  upstream = await createTestUpstream({ outputTokens: 8 });
  web = await startEverythingHttp();
  gw = await startAiServer(upstream, {
    mcp: {
      auth: { authType: 'jwt' },
      rateLimiting: { enabled: true, windowMs: 60_000, maxRequests: 1000, maxToolCalls: MAX_TOOL_CALLS },
    },
    gateway: { allowPrivateNetwork: true },
    mcpServers: { web: { type: 'http', url: web.url, timeoutMs: 10_000, pricing: { tokensPerCall: 0, tools: { echo: PRICE } } } },
  });
  admin = await tokenFor(`gwlim-${run}-admin`, { admin: true });
  await waitForUpstreams(gw.runtime);
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await web?.stop();
  await upstream?.close();
});

const echo = (token: string, message: string) =>
  rpcCall(gw.url, token, 'gateway.callTool', { server: 'web', tool: 'echo', arguments: { message } });
const sum = (token: string) => rpcCall(gw.url, token, 'gateway.callTool', { server: 'web', tool: 'get-sum', arguments: { a: 1, b: 2 } });

/** A user with `tokens` of credit and their JWT. */
async function user(name: string, tokens: number): Promise<{ sub: string; token: string }> {
  const sub = `gwlim-${run}-${name}`;
  const token = await tokenFor(sub);
  if (tokens > 0) await creditTokens(gw.url, admin, sub, tokens, `seed-${sub}`);
  return { sub, token };
}

async function keyOf(token: string, rules: Record<string, unknown>): Promise<string> {
  const made = await rpcCall<{ key: string }>(gw.url, token, 'keys.create', { name: 'gateway limits', ...rules });
  if (!made.result) throw new Error(`keys.create failed: ${made.text}`);
  return made.result.key;
}

describe('MCP gateway: limits on priced upstream calls', () => {
  it("a priced call spends the caller's platform tokens; out of tokens it is refused with 402, and free tools still answer", async () => {
    const { sub, token } = await user('balance', 2 * CHARGED + 50);
    expect((await echo(token, 'one')).result?.content?.[0]?.text).toBe('Echo: one');
    expect((await echo(token, 'two')).result?.content?.[0]?.text).toBe('Echo: two');
    expect((await gw.runtime.billing.balances(sub)).subscription).toBe(50);
    const refused = await echo(token, 'three');
    expect(refused.error?.data?.appCode).toBe('PAYMENT_REQUIRED');
    expect((await gw.runtime.billing.balances(sub)).subscription).toBe(50);
    // The same refusal on /mcp is a tool error the model can read.
    const client = await mcpClient(gw.url, token);
    try {
      const r = (await client.callTool({ name: 'web__echo', arguments: { message: 'four' } })) as {
        isError?: boolean;
        content: Array<{ text?: string }>;
      };
      expect(r.isError).toBe(true);
      expect(r.content[0]?.text).toMatch(/insufficient|tokens/i);
      expect((await client.callTool({ name: 'web__get-sum', arguments: { a: 2, b: 3 } })).isError).toBeFalsy();
    } finally {
      await client.close();
    }
  });

  it("the caller's daily token budget refuses the call that would pass it", async () => {
    const { token, sub } = await user('budget', 100_000);
    const set = await rpcCall(gw.url, admin, 'admin.setBudget', { userId: sub, period: 'daily', tokens: 2 * PRICE + 50 });
    expect(set.error).toBeUndefined();
    expect((await echo(token, 'x')).result?.content?.[0]?.text).toBe('Echo: x');
    expect((await echo(token, 'y')).result?.content?.[0]?.text).toBe('Echo: y');
    const over = await echo(token, 'z');
    expect(over.error?.data?.appCode).toBe('PAYMENT_REQUIRED');
    expect(over.error?.data?.details).toMatchObject({ reason: 'budget_exceeded' });
  });

  it("through an API key: the key's token budget and its requests per minute refuse the call with their own errors", async () => {
    const owner = await user('keys', 100_000);
    const budgeted = await keyOf(owner.token, { budget: { total: { tokens: 2 * PRICE + 50 } } });
    expect((await echo(budgeted, 'a')).result?.content?.[0]?.text).toBe('Echo: a');
    expect((await echo(budgeted, 'b')).result?.content?.[0]?.text).toBe('Echo: b');
    const overBudget = await echo(budgeted, 'c');
    expect(overBudget.error?.data?.appCode).toBe('PAYMENT_REQUIRED');
    expect(overBudget.error?.data?.details).toMatchObject({ reason: 'key_budget_exceeded', period: 'total', metric: 'tokens' });
    // The owner's own calls are not the key's: the owner still has tokens.
    expect((await echo(owner.token, 'owner')).result?.content?.[0]?.text).toBe('Echo: owner');

    const limited = await keyOf(owner.token, { limits: { requestsPerMinute: 2 } });
    expect((await sum(limited)).result?.isError).toBeFalsy();
    expect((await sum(limited)).result?.isError).toBeFalsy();
    const tooMany = await sum(limited);
    expect(tooMany.error?.data?.appCode).toBe('RATE_LIMITED');
    expect(tooMany.error?.data?.details).toMatchObject({ reason: 'key_requests_limit' });
  });

  it("every gateway call counts against the caller's maxToolCalls, on /rpc and /mcp alike", async () => {
    const { token } = await user('rate', 0);
    for (let i = 0; i < MAX_TOOL_CALLS - 1; i++) expect((await sum(token)).result?.isError, `call ${i + 1}`).toBeFalsy();
    const client = await mcpClient(gw.url, token);
    try {
      expect((await client.callTool({ name: 'web__get-sum', arguments: { a: 1, b: 1 } })).isError).toBeFalsy();
      const seventh = await sum(token);
      expect(seventh.error?.data?.appCode).toBe('RATE_LIMITED');
      const viaMcp = await client.callTool({ name: 'web__get-sum', arguments: { a: 1, b: 1 } }).then(
        (r) => JSON.stringify(r),
        (e: Error) => e.message,
      );
      expect(viaMcp).toMatch(/rate|too many/i);
    } finally {
      await client.close();
    }
  });
});
