import { createHmac } from 'node:crypto';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Runtime } from '../../runtime/Runtime.js';
import { alice, backends, bob, makeRuntime, type OpenStore } from './__tests__/kit.js';
import { handlePurchaseWebhook, verifyPurchaseWebhook } from './purchaseWebhook.js';

const SECRET = 'whsec-test-0123456789abcdef0123456789';

function sign(body: string, ts = Math.floor(Date.now() / 1000), secret = SECRET) {
  return {
    rawBody: body,
    timestampHeader: String(ts),
    signatureHeader: 'sha256=' + createHmac('sha256', secret).update(`${ts}.${body}`).digest('hex'),
  };
}

const event = (
  id: string,
  data: Record<string, unknown> = { userId: alice.sub, tokens: 5000, tokenType: 'one_time', reference: 'order-9' },
) => JSON.stringify({ id, type: 'purchase.completed', data });

describe('verifyPurchaseWebhook', () => {
  const body = event('evt-1');
  it('accepts a fresh, correctly signed body (plain hex, prefixed, or one of several)', () => {
    const s = sign(body);
    expect(verifyPurchaseWebhook({ ...s, secret: SECRET, toleranceSec: 300 }).timestamp).toBe(Number(s.timestampHeader));
    const hex = s.signatureHeader.slice('sha256='.length);
    expect(() => verifyPurchaseWebhook({ ...s, signatureHeader: hex, secret: SECRET, toleranceSec: 300 })).not.toThrow();
    expect(() =>
      verifyPurchaseWebhook({ ...s, signatureHeader: `v1=${'0'.repeat(64)}, v1=${hex}`, secret: SECRET, toleranceSec: 300 }),
    ).not.toThrow();
    expect(() => verifyPurchaseWebhook({ ...s, rawBody: new TextEncoder().encode(body), secret: SECRET, toleranceSec: 300 })).not.toThrow();
  });

  it.each([
    [
      'a tampered body',
      (s: ReturnType<typeof sign>) => ({ ...s, rawBody: s.rawBody.replace('5000', '50000') }),
      'invalid webhook signature',
    ],
    [
      'another secret',
      (s: ReturnType<typeof sign>) => ({ ...s, ...sign(s.rawBody, Number(s.timestampHeader), 'another-secret-0123456789abcdef0123') }),
      'invalid webhook signature',
    ],
    ['a missing signature', (s: ReturnType<typeof sign>) => ({ ...s, signatureHeader: null }), 'invalid webhook signature'],
    ['a short signature', (s: ReturnType<typeof sign>) => ({ ...s, signatureHeader: 'abcd' }), 'invalid webhook signature'],
    [
      'a changed timestamp',
      (s: ReturnType<typeof sign>) => ({ ...s, timestampHeader: String(Number(s.timestampHeader) - 1) }),
      'invalid webhook signature',
    ],
    [
      'a missing timestamp',
      (s: ReturnType<typeof sign>) => ({ ...s, timestampHeader: undefined }),
      'webhook timestamp missing or malformed',
    ],
    [
      'an old timestamp (replay)',
      (s: ReturnType<typeof sign>) => sign(s.rawBody, Math.floor(Date.now() / 1000) - 301),
      'webhook timestamp outside the accepted window',
    ],
    [
      'a future timestamp',
      (s: ReturnType<typeof sign>) => sign(s.rawBody, Math.floor(Date.now() / 1000) + 301),
      'webhook timestamp outside the accepted window',
    ],
  ])('refuses %s', (_name, mutate, message) => {
    expect(() => verifyPurchaseWebhook({ ...mutate(sign(body)), secret: SECRET, toleranceSec: 300 })).toThrow(message);
    try {
      verifyPurchaseWebhook({ ...mutate(sign(body)), secret: SECRET, toleranceSec: 300 });
    } catch (err) {
      expect(err).toMatchObject({ appCode: 'UNAUTHORIZED' });
    }
  });
});

describe.each(backends)('handlePurchaseWebhook on $name', (backend) => {
  let store: OpenStore;
  let rt: Runtime;
  beforeAll(async () => backend.setup?.());
  beforeEach(async () => {
    store = await backend.open('billing-webhook');
    rt = await makeRuntime(store.storage, { billing: { webhookSecret: SECRET } });
  });
  afterEach(async () => {
    await rt.close();
    await store.cleanup();
  });

  it('credits once per event id; a redelivery answers 200 and changes nothing', async () => {
    const first = await handlePurchaseWebhook(rt, sign(event('evt-1')));
    expect(first).toEqual({ status: 200, body: { received: true, applied: true } });
    const again = await handlePurchaseWebhook(rt, sign(event('evt-1')));
    expect(again).toEqual({ status: 200, body: { received: true, applied: false, replay: true } });
    expect(await rt.billing.balances(alice.sub)).toEqual({ subscription: 0, one_time: 5000 });
    const [entry] = await rt.billing.ledger.entries(alice.sub);
    expect(entry).toMatchObject({ kind: 'credit', source: 'webhook', note: { eventId: 'evt-1', reference: 'order-9' } });
  });

  it('refuses an event id reused for another user or amount', async () => {
    await handlePurchaseWebhook(rt, sign(event('evt-2')));
    await expect(
      handlePurchaseWebhook(rt, sign(event('evt-2', { userId: bob.sub, tokens: 5000, tokenType: 'one_time' }))),
    ).rejects.toMatchObject({ appCode: 'CONFLICT' });
    await expect(
      handlePurchaseWebhook(rt, sign(event('evt-2', { userId: alice.sub, tokens: 9999, tokenType: 'one_time' }))),
    ).rejects.toMatchObject({ appCode: 'CONFLICT' });
    expect((await rt.billing.balances(bob.sub)).one_time).toBe(0);
    expect((await rt.billing.balances(alice.sub)).one_time).toBe(5000);
  });

  it('refuses bad signatures and malformed bodies; ignores other event types', async () => {
    await expect(handlePurchaseWebhook(rt, { ...sign(event('evt-3')), signatureHeader: 'sha256=' + 'a'.repeat(64) })).rejects.toMatchObject(
      { appCode: 'UNAUTHORIZED' },
    );
    await expect(handlePurchaseWebhook(rt, sign('not json'))).rejects.toMatchObject({ appCode: 'BAD_REQUEST' });
    await expect(
      handlePurchaseWebhook(rt, sign(event('evt-4', { userId: alice.sub, tokens: -5, tokenType: 'one_time' }))),
    ).rejects.toMatchObject({ appCode: 'BAD_REQUEST' });
    await expect(
      handlePurchaseWebhook(rt, sign(event('evt-5', { userId: alice.sub, tokens: 5, tokenType: 'gold' }))),
    ).rejects.toMatchObject({ appCode: 'BAD_REQUEST' });
    expect(await handlePurchaseWebhook(rt, sign(JSON.stringify({ id: 'evt-6', type: 'subscription.cancelled' })))).toEqual({
      status: 200,
      body: { received: true, applied: false, ignored: true },
    });
    expect(await rt.billing.balances(alice.sub)).toEqual({ subscription: 0, one_time: 0 });
  });

  it('is off without billing.webhookSecret', async () => {
    const off = await makeRuntime(await store.another());
    try {
      await expect(handlePurchaseWebhook(off, sign(event('evt-7')))).rejects.toMatchObject({ appCode: 'NOT_CONFIGURED' });
    } finally {
      if (backend.name === 'redis') await off.close();
    }
  });
});
