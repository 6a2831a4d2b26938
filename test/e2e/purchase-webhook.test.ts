import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHmac } from 'node:crypto';
import { mintDevToken } from '@ai-backend/auth';
import { startTestServer, rpc, type TestServer } from './helpers/testServer.js';

const JWT_SECRET = 'w'.repeat(40);
const WEBHOOK_SECRET = 'h'.repeat(40);
let s: TestServer;
let token: string;

beforeAll(async () => {
  s = await startTestServer({
    mcp: { auth: { authType: 'jwt' } },
    jwt: { secret: JWT_SECRET },
    billing: { webhookSecret: WEBHOOK_SECRET },
  });
  token = await mintDevToken({ secret: JWT_SECRET, sub: 'buyer-1', email: 'buyer@example.com' });
});
afterAll(() => s.stop());

function signed(body: string, secret = WEBHOOK_SECRET, ts = Math.floor(Date.now() / 1000)) {
  const sig = createHmac('sha256', secret).update(`${ts}.${body}`).digest('hex');
  return {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-webhook-signature': `sha256=${sig}`, 'x-webhook-timestamp': String(ts) },
    body,
  };
}

const balance = async () => {
  const res = await s.fetch('/rpc', {
    ...rpc('billing.getUserTokenBalances', {}),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
  });
  return ((await res.json()) as any).result;
};

describe('POST /webhooks/purchase', () => {
  const event = JSON.stringify({
    id: 'evt_1',
    type: 'purchase.completed',
    data: { userId: 'buyer-1', tokens: 5000, tokenType: 'one_time' },
  });

  it('credits once per event id; a redelivery changes nothing', async () => {
    const first = await s.fetch('/webhooks/purchase', signed(event));
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({ applied: true });
    const again = await s.fetch('/webhooks/purchase', signed(event));
    expect(await again.json()).toMatchObject({ applied: false, replay: true });
    expect(JSON.stringify(await balance())).toContain('5000');
  });

  it('refuses a bad signature, a stale timestamp and a malformed body', async () => {
    expect((await s.fetch('/webhooks/purchase', signed(event, 'x'.repeat(40)))).status).toBe(401);
    expect((await s.fetch('/webhooks/purchase', signed(event, WEBHOOK_SECRET, Math.floor(Date.now() / 1000) - 3600))).status).toBe(401);
    expect((await s.fetch('/webhooks/purchase', signed('{"id":'))).status).toBe(400);
    expect(JSON.stringify(await balance())).toContain('5000');
  });
});
