import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyAlertSignature, type ConfigInput } from '@ai-backend/core';
import { dropTestKeys, testRedis } from '@ai-backend/test-utils/services';
import {
  createTestUpstream,
  creditTokens,
  gatewayConfig,
  rpcCall,
  startAiServer,
  tokenFor,
  waitFor,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { webhookReceiver } from './helpers/webhookReceiver.js';

/**
 * Alert webhooks over real servers: a local receiver that fails and recovers, and a server killed
 * (SIGKILL) with an alert pending whose successor on the same store delivers it.
 */
const SECRET = 'alert-webhook-secret-0123456789abcdefgh';
const redisAt = await testRedis();

const until = (cond: () => boolean | Promise<boolean>) => waitFor(cond, { timeoutMs: 10_000, intervalMs: 25 });

/** Make `sub`'s balance cross the default tokenLow threshold (1000) with one small platform call. */
async function crossTokenLow(url: string, sub: string) {
  await creditTokens(url, await tokenFor('alerts-admin', { admin: true }), sub, 1010, `alerts-${randomUUID()}`);
  const r = await rpcCall(url, await tokenFor(sub), 'ai.generateText', {
    content: 'hi',
    systemPrompt: 's',
    provider: 'openai',
    options: { maxTokens: 20 },
  });
  if (!r.result) throw new Error(r.text);
}

let upstream: TestUpstream;
beforeAll(async () => {
  upstream = await createTestUpstream();
});
afterAll(() => upstream.close());

describe('signed alert webhooks', () => {
  it('retries a failing receiver with backoff and delivers once it recovers: same idempotency key, valid signature', async () => {
    const hook = await webhookReceiver((n) => (n < 2 ? 500 : 204));
    const s = await startAiServer(upstream, {
      storage: { type: 'memory' },
      alerts: { webhooks: [{ url: hook.url, secret: SECRET }], retryBaseMs: 100, pollIntervalMs: 20 },
    });
    try {
      await crossTokenLow(s.url, 'alerts-user-1');
      await until(() => hook.got.some((g) => g.answered === 204));
      expect(hook.got.map((g) => g.answered)).toEqual([500, 500, 204]);
      const keys = new Set(hook.got.map((g) => g.headers['idempotency-key']));
      expect(keys.size).toBe(1);
      // Backoff: the second retry waited longer than the first (base 100 ms, doubling, ±20% jitter).
      for (const g of hook.got) {
        expect(g.headers['x-ai-backend-event']).toBe('tokenLow');
        expect(verifyAlertSignature(SECRET, g.body, g.headers['x-ai-backend-signature'] as string)).toBe(true);
        expect(verifyAlertSignature('another-secret-0123456789abcdefghijkl', g.body, g.headers['x-ai-backend-signature'] as string)).toBe(
          false,
        );
        expect(
          verifyAlertSignature(SECRET, g.body.replace('alerts-user-1', 'someone-else'), g.headers['x-ai-backend-signature'] as string),
        ).toBe(false);
      }
      const body = JSON.parse(hook.got[2]!.body);
      expect(body).toMatchObject({ event: 'tokenLow', id: [...keys][0], data: { userId: 'alerts-user-1', threshold: 1000 } });
      // The record leaves the outbox once the 2xx is in (the receiver answers before the server deletes it).
      await until(async () => (await s.runtime.alerts.pending()).outbox === 0);
      expect(await s.runtime.alerts.pending()).toEqual({ outbox: 0, dead: 0, deadDropped: 0 });
      const metrics = await (
        await fetch(s.url + '/metrics', { headers: { authorization: `Bearer ${await tokenFor('alerts-admin', { admin: true })}` } })
      ).text();
      expect(metrics).toContain('ai_backend_alerts_total{event="tokenLow",outcome="retry"} 2');
      expect(metrics).toContain('ai_backend_alerts_total{event="tokenLow",outcome="delivered"} 1');
    } finally {
      await s.stop();
      await hook.close();
    }
  });

  it('retries when the backoff says, not at the next poll: the gaps double from retryBaseMs', async () => {
    const arrived: number[] = [];
    const hook = await webhookReceiver((n) => (arrived.push(performance.now()), n < 3 ? 503 : 204));
    // pollIntervalMs left at its default (1 s): far longer than the first retries' backoff.
    const s = await startAiServer(upstream, {
      storage: { type: 'memory' },
      alerts: { webhooks: [{ url: hook.url, secret: SECRET }], retryBaseMs: 100 },
    });
    try {
      await crossTokenLow(s.url, 'alerts-user-backoff');
      await until(() => hook.got.some((g) => g.answered === 204));
      const gaps = arrived.slice(1).map((t, i) => t - arrived[i]!);
      // 100, 200, 400 ms (±20 % jitter): never sooner, and the first not waiting for a 1 s poll
      // (bounds above are loose: a loaded machine adds delay, never removes it).
      gaps.forEach((gap, i) => expect(gap, `gap ${i}`).toBeGreaterThanOrEqual(0.8 * 100 * 2 ** i - 5));
      expect(gaps[0]).toBeLessThan(700);
      expect(gaps[2]).toBeGreaterThan(gaps[0]!);
    } finally {
      await s.stop();
      await hook.close();
    }
  });

  it("two receivers on one URL with different secrets: each delivery is signed with its own receiver's secret", async () => {
    const OTHER = 'alert-webhook-other-secret-0123456789abc';
    const hook = await webhookReceiver(() => 204);
    const s = await startAiServer(upstream, {
      storage: { type: 'memory' },
      alerts: {
        webhooks: [
          { url: hook.url, secret: SECRET, events: ['providerDegraded'] },
          { url: hook.url, secret: OTHER, events: ['tokenLow'] },
        ],
        pollIntervalMs: 20,
      },
    });
    try {
      await crossTokenLow(s.url, 'alerts-user-shared-url');
      await until(() => hook.got.length >= 1);
      const g = hook.got[0]!;
      expect(g.headers['x-ai-backend-event']).toBe('tokenLow');
      expect(verifyAlertSignature(OTHER, g.body, g.headers['x-ai-backend-signature'] as string)).toBe(true);
    } finally {
      await s.stop();
      await hook.close();
    }
  });

  it('gives up after maxAttempts and keeps the alert in the dead-letter list', async () => {
    const hook = await webhookReceiver(() => 503);
    const s = await startAiServer(upstream, {
      storage: { type: 'memory' },
      alerts: { webhooks: [{ url: hook.url, secret: SECRET }], retryBaseMs: 20, pollIntervalMs: 20, maxAttempts: 3 },
    });
    try {
      await crossTokenLow(s.url, 'alerts-user-2');
      await until(async () => (await s.runtime.alerts.pending()).dead === 1);
      expect(hook.got).toHaveLength(3);
    } finally {
      await s.stop();
      await hook.close();
    }
  });

  it('sends providerDegraded when a healthy provider starts failing', async () => {
    const hook = await webhookReceiver(() => 200);
    const s = await startAiServer(upstream, {
      storage: { type: 'memory' },
      ai: { maxRetries: 0 },
      alerts: { webhooks: [{ url: hook.url, secret: SECRET, events: ['providerDegraded'] }], pollIntervalMs: 20 },
    });
    try {
      await creditTokens(s.url, await tokenFor('alerts-admin', { admin: true }), 'alerts-user-3', 50_000, 'alerts-3');
      upstream.failNext({ kind: 'status', status: 500 }, 1);
      await rpcCall(s.url, await tokenFor('alerts-user-3'), 'ai.generateText', { content: 'x', systemPrompt: 's', provider: 'google' });
      await until(() => hook.got.length === 1);
      expect(JSON.parse(hook.got[0]!.body)).toMatchObject({ event: 'providerDegraded', data: { provider: 'google' } });
    } finally {
      await s.stop();
      await hook.close();
    }
  });
});

describe.skipIf(!redisAt.ok)('an alert pending when its server is killed', () => {
  it('is delivered by the next server on the same store, with the same idempotency key', async () => {
    const keyPrefix = `ai-backend-test:alerts:${process.pid}:${randomUUID().slice(0, 8)}:`;
    const hook = await webhookReceiver(() => 503);
    const config: ConfigInput = {
      ...gatewayConfig(upstream),
      monitoring: { logging: { level: 'silent' } },
      storage: { type: 'redis', redis: { host: redisAt.host, port: redisAt.port, keyPrefix } },
      alerts: { webhooks: [{ url: hook.url, secret: SECRET }], retryBaseMs: 60_000, pollIntervalMs: 20 },
    };
    const script = fileURLToPath(new URL('../../bench/servers/ai-backend.mjs', import.meta.url));
    const child = spawn(process.execPath, [script, JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.once('data', (d) => resolve(JSON.parse(String(d)).url));
        child.once('exit', (code) => reject(new Error(`server exited ${code}`)));
      });
      await crossTokenLow(url, 'alerts-user-4');
      await until(() => hook.got.length === 1); // first attempt failed; the next is a minute away
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
      hook.setAnswer(() => 200);
      const next = await startAiServer(upstream, { storage: config.storage, alerts: { ...config.alerts, retryBaseMs: 60_000 } });
      try {
        // The record's retry time has not come: a successor honours the backoff, it does not resend at once.
        expect(await next.runtime.alerts.pending()).toEqual({ outbox: 1, dead: 0, deadDropped: 0 });
      } finally {
        await next.stop();
      }
      // The killed server may have died between its attempt and writing the retry time, leaving
      // its lease on the record: both end with time. Rewrite them as a minute passing would.
      const after = await startAiServer(upstream, { storage: config.storage, alerts: { ...config.alerts } });
      try {
        const keys = await after.runtime.storage.keys('alerts:outbox:');
        const rec = (await after.runtime.storage.get<Record<string, unknown>>(keys[0]!))!;
        expect((rec.nextAt as number) > Date.now() || (rec.leaseUntil as number) > Date.now()).toBe(true);
        // Due now in the outbox's due index too (the scans read that, not a listing).
        const dueNow = Date.now();
        await after.runtime.storage.transact([], () => ({
          writes: [{ op: 'set', key: keys[0]!, value: { ...rec, nextAt: dueNow, leaseUntil: 0 }, dueAt: dueNow }],
          result: undefined,
        }));
        await until(() => hook.got.length === 2);
        expect(hook.got[1]!.answered).toBe(200);
        expect(hook.got[1]!.headers['idempotency-key']).toBe(hook.got[0]!.headers['idempotency-key']);
        expect(hook.got[1]!.body).toBe(hook.got[0]!.body);
        await until(async () => (await after.runtime.alerts.pending()).outbox === 0);
      } finally {
        await after.stop();
      }
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await hook.close();
      await dropTestKeys(redisAt, keyPrefix);
    }
  });
});
