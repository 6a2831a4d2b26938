import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ALERT_SIGNATURE_HEADER, signAlert, verifyAlertSignature } from 'ai-backend';

/**
 * docs/operations.md tells an alert receiver to verify with `verifyAlertSignature` from the
 * package users install (`ai-backend`), or by hand: HMAC-SHA256(secret, "<t>.<body>") in hex.
 */
const SECRET = 'alert-recipe-secret-0123456789abcdefghij';

describe('alert webhook signature, as documented', () => {
  it('verifyAlertSignature and the header name are exported by ai-backend', () => {
    expect(ALERT_SIGNATURE_HEADER).toBe('x-ai-backend-signature');
    const body = JSON.stringify({ id: 'x', event: 'tokenLow', createdAt: new Date().toISOString(), data: { userId: 'u' } });
    const t = Math.floor(Date.now() / 1000);
    const header = signAlert(SECRET, body, t);
    expect(header).toBe(`t=${t},v1=${createHmac('sha256', SECRET).update(`${t}.${body}`).digest('hex')}`);
    expect(verifyAlertSignature(SECRET, body, header)).toBe(true);
    expect(verifyAlertSignature(SECRET, body + ' ', header)).toBe(false);
    expect(verifyAlertSignature(SECRET, body, signAlert(SECRET, body, t - 301))).toBe(false);
  });
});
