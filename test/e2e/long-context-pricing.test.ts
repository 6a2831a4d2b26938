import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestUpstream,
  creditTokens,
  rpcCall,
  startAiServer,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';

/**
 * A provider that bills long prompts above its standard prices (Gemini 2.5 Pro: $2.50 / $15 per
 * million tokens past 200k input tokens, instead of $1.25 / $10) is recorded, and counted against a
 * money budget, at what it bills (docs/billing.md "Money cost"). Before, such a call was counted at
 * the standard prices: a daily budget of $0.50 let a second 250k-token call through after the first
 * had already spent $0.63 of the operator's money.
 */
const LONG = 250_000;
const OUTPUT = 16;

describe('long-context prices against a money budget', () => {
  let upstream: TestUpstream;
  let gw: AiServer;
  let admin: string;
  let user: string;
  const sub = 'long-prompt-user';
  beforeAll(async () => {
    // Every call reports 250k input tokens, as a prompt with a few long PDFs would.
    upstream = await createTestUpstream({ outputTokens: OUTPUT, countInputTokens: () => LONG });
    gw = await startAiServer(upstream, { admin: { users: ['long-admin'] } });
    admin = await tokenFor('long-admin', { admin: true });
    user = await tokenFor(sub);
    await creditTokens(gw.url, admin, sub, 2_000_000, 'long-1');
    const set = await rpcCall(gw.url, admin, 'admin.setBudget', { userId: sub, period: 'daily', usd: 0.5 });
    expect(set.result, set.text).toBeDefined();
  });
  afterAll(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  const call = () =>
    rpcCall(gw.url, user, 'ai.generateText', {
      content: 'summarise the attached',
      systemPrompt: 'Be brief.',
      provider: 'google',
      options: { model: 'gemini-2.5-pro', maxTokens: OUTPUT },
    });

  it('records the call at the long-context prices and refuses the next one past the budget', async () => {
    const first = await call();
    expect(first.result, first.text).toBeDefined();
    const expected = (LONG * 2.5 + OUTPUT * 15) / 1_000_000;
    const history = await rpcCall(gw.url, user, 'billing.getUsageHistory', { limit: 1 });
    expect(history.result.usage[0].estimatedCostUsd).toBeCloseTo(expected, 9);
    const budget = await rpcCall(gw.url, user, 'billing.getBudget');
    const daily = budget.result.periods.find((p: { period: string }) => p.period === 'daily');
    expect(daily.spent.usd).toBeCloseTo(expected, 6);
    // The preview prices a long estimate at its dearest split: just past the threshold, the rest
    // as output at the long-context price ($0.50 + 800k × $15 per million, over $10 for all output).
    const preview = await rpcCall(gw.url, user, 'billing.planConsumption', {
      estimatedTokens: 1_000_000,
      provider: 'google',
      model: 'gemini-2.5-pro',
    });
    expect(preview.result.budget.requested).toBeCloseTo((200_001 * 2.5 + 799_999 * 15) / 1_000_000, 6);
    const second = await call();
    expect(second.error?.data).toMatchObject({ appCode: 'PAYMENT_REQUIRED', details: { reason: 'budget_exceeded', metric: 'usd' } });
  });
});
