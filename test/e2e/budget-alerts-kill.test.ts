import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimateTokens, verifyAlertSignature, type ConfigInput } from '@ai-backend/core/internal';
import { dropTestKeys, testRedis } from '@ai-backend/test-utils/services';
import {
  createTestUpstream,
  creditTokens,
  gatewayConfig,
  rpcCall,
  sleep,
  startAiServer,
  tokenFor,
  trpcClient,
  waitFor,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { webhookReceiver, type ReceivedHook } from './helpers/webhookReceiver.js';

/**
 * A budgetThreshold alert is written in the transaction that charges the call. A server killed
 * (SIGKILL) while delivering it loses nothing: the next server on the same store delivers it,
 * once, with the same idempotency key and body.
 */
const SECRET = 'budget-kill-secret-0123456789abcdefghijk';
const SYSTEM = 'Answer briefly.';
const MAX_TOKENS = 50;
const CONTENT = 'budget alert before a kill';
const WORST = estimateTokens(CONTENT, SYSTEM, MAX_TOKENS);
const redisAt = await testRedis();

const until = (cond: () => boolean | Promise<boolean>) => waitFor(cond, { timeoutMs: 15_000, intervalMs: 25 });

let upstream: TestUpstream;
beforeAll(async () => {
  upstream = await createTestUpstream({ outputTokens: 1000, countInputTokens: (system, text) => estimateTokens(text, system, 0) });
});
afterAll(() => upstream?.close());

describe.skipIf(!redisAt.ok)('a budget alert pending when its server is killed', () => {
  it('is delivered by the next server on the same store exactly once', async () => {
    const keyPrefix = `ai-backend-test:budget-kill:${process.pid}:${randomUUID().slice(0, 8)}:`;
    let child: ReturnType<typeof spawn> | undefined;
    let killed!: Promise<unknown>;
    // The moment the killed server's attempt reaches the receiver, it dies: the attempt is never answered.
    const hook = await webhookReceiver(
      (n) => (n === 0 ? 'hold' : 204),
      (h) => {
        if (h.answered !== null) return;
        killed = new Promise((r) => child!.once('exit', r));
        child!.kill('SIGKILL');
      },
    );
    const alerts = {
      webhooks: [{ url: hook.url, secret: SECRET, events: ['budgetThreshold' as const] }],
      pollIntervalMs: 20,
      retryBaseMs: 100,
      timeoutMs: 1000,
    };
    const config: ConfigInput = {
      ...gatewayConfig(upstream),
      monitoring: { logging: { level: 'silent' } },
      storage: { type: 'redis', redis: { host: redisAt.host, port: redisAt.port, keyPrefix } },
      alerts,
    };
    const sub = `budget-kill-${randomUUID().slice(0, 8)}`;
    const script = fileURLToPath(new URL('../../bench/servers/ai-backend.mjs', import.meta.url));
    child = spawn(process.execPath, [script, JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        child!.stdout!.once('data', (d) => resolve(JSON.parse(String(d)).url));
        child!.once('exit', (code) => reject(new Error(`server exited ${code}`)));
      });
      const admin = await tokenFor('budget-kill-admin', { admin: true });
      await rpcCall(url, admin, 'admin.setBudget', { userId: sub, period: 'daily', tokens: 2 * WORST, thresholds: [0.5] });
      await creditTokens(url, admin, sub, 100_000, `budget-kill-${sub}`);
      const call = await rpcCall(url, await tokenFor(sub), 'ai.generateText', {
        content: CONTENT,
        systemPrompt: SYSTEM,
        provider: 'openai',
        options: { maxTokens: MAX_TOKENS },
      });
      expect(call.result?.tokenUsage.tokensUsed).toBe(WORST); // charged: half the budget, the 0.5 threshold

      await until(() => hook.got.length === 1);
      await killed;
      expect(child.signalCode).toBe('SIGKILL');

      const next = await startAiServer(upstream, { storage: config.storage, alerts });
      try {
        // The charge and its alert were committed together: both are in the store the killed server left.
        const budget = await trpcClient(next.url, admin).admin.getBudget.query({ userId: sub });
        expect(budget.periods[0]).toMatchObject({ period: 'daily', spent: { tokens: WORST }, reserved: { tokens: 0 } });
        // The killed attempt holds a lease (2 × timeoutMs); after it, the next server delivers.
        await until(() => hook.got.length === 2);
        await until(async () => (await next.runtime.alerts.pending()).outbox === 0);
        await sleep(1000); // a deliberate pause: time for any duplicate to arrive (asserting none does)
        expect(hook.got).toHaveLength(2);
        expect(hook.got.filter((g) => g.answered === 204)).toHaveLength(1);
        const [lost, delivered] = hook.got as [ReceivedHook, ReceivedHook];
        const day = new Date().toISOString().slice(0, 10);
        expect(delivered.key).toBe(`budgetThreshold:${sub}:daily:${day}:tokens:0.5`);
        expect(lost.key).toBe(delivered.key);
        expect(lost.body).toBe(delivered.body);
        expect(verifyAlertSignature(SECRET, delivered.body, delivered.signature)).toBe(true);
        expect(JSON.parse(delivered.body)).toMatchObject({
          id: delivered.key,
          event: 'budgetThreshold',
          data: { userId: sub, period: 'daily', metric: 'tokens', threshold: 0.5, limit: 2 * WORST, spent: WORST },
        });
        expect(await next.runtime.alerts.pending()).toEqual({ outbox: 0, dead: 0, deadDropped: 0 });
      } finally {
        await next.stop();
      }
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await hook.close();
      await dropTestKeys(redisAt, keyPrefix);
    }
  }, 60_000);
});
