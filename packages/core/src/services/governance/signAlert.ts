import { createHmac, timingSafeEqual } from 'node:crypto';

/** Header carrying `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. */
export const ALERT_SIGNATURE_HEADER = 'x-ai-backend-signature';

/** Sign a webhook body: the timestamp is inside the MAC, so a captured request cannot be replayed later with a new time. */
export function signAlert(secret: string, body: string, timestampSec: number): string {
  const mac = createHmac('sha256', secret).update(`${timestampSec}.${body}`).digest('hex');
  return `t=${timestampSec},v1=${mac}`;
}

/**
 * What a receiver runs: true when `header` signs `body` with `secret` and its timestamp is within
 * `toleranceSec` of now (default 300 s).
 */
export function verifyAlertSignature(
  secret: string,
  body: string,
  header: string | null,
  opts: { toleranceSec?: number; nowSec?: number } = {},
): boolean {
  if (!header) return false;
  const parts = Object.fromEntries(header.split(',').map((p) => p.trim().split('=', 2) as [string, string]));
  const t = Number(parts.t);
  if (!Number.isInteger(t) || typeof parts.v1 !== 'string') return false;
  const now = opts.nowSec ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - t) > (opts.toleranceSec ?? 300)) return false;
  const expected = Buffer.from(signAlert(secret, body, t).split('v1=')[1]!, 'hex');
  const got = Buffer.from(parts.v1, 'hex');
  return got.length === expected.length && timingSafeEqual(got, expected);
}
