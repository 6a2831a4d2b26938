import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from '../../lib/zod.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { ResolvedConfig } from '../../config/schema.js';
import type { Logger } from '../../kernel/Logger.js';
import type { BillingService } from './BillingService.js';

/** What applying a purchase needs: the webhook settings, the ledger and a log line. */
export interface PurchaseWebhookDeps {
  config: Pick<ResolvedConfig, 'billing'>;
  billing: Pick<BillingService, 'credit'>;
  logger: Pick<Logger, 'info'>;
}
import { BALANCE_TYPES } from './types.js';

export interface VerifyPurchaseWebhookOptions {
  /** The request body exactly as received (before any JSON parsing). */
  rawBody: string | Uint8Array;
  /** Signature header: hex HMAC-SHA256, optionally `sha256=`/`v1=` prefixed; several comma-separated are tried. */
  signatureHeader: string | null | undefined;
  /** Timestamp header: Unix seconds, signed together with the body. */
  timestampHeader: string | null | undefined;
  secret: string;
  /** Largest accepted distance between the timestamp and now, in seconds. */
  toleranceSec: number;
  /** Current time in ms (tests). */
  now?: number;
}

/**
 * Check an HMAC-SHA256 signature over `${timestamp}.${rawBody}` in constant time and that the
 * timestamp is within tolerance (replay protection). Throws CoreError UNAUTHORIZED otherwise.
 */
export function verifyPurchaseWebhook(o: VerifyPurchaseWebhookOptions): { timestamp: number } {
  const ts = o.timestampHeader?.trim() ?? '';
  if (!/^\d{1,12}$/.test(ts)) throw new CoreError('UNAUTHORIZED', 'webhook timestamp missing or malformed');
  const timestamp = Number(ts);
  const nowSec = Math.floor((o.now ?? Date.now()) / 1000);
  if (Math.abs(nowSec - timestamp) > o.toleranceSec) throw new CoreError('UNAUTHORIZED', 'webhook timestamp outside the accepted window');
  const body = typeof o.rawBody === 'string' ? Buffer.from(o.rawBody, 'utf8') : Buffer.from(o.rawBody);
  const expected = createHmac('sha256', o.secret).update(`${ts}.`).update(body).digest();
  const candidates = (o.signatureHeader ?? '').split(',').map((s) => s.trim().replace(/^(sha256|v1)=/, ''));
  const ok = candidates.some((hex) => {
    if (!/^[0-9a-fA-F]{64}$/.test(hex)) return false;
    return timingSafeEqual(Buffer.from(hex, 'hex'), expected);
  });
  if (!ok) throw new CoreError('UNAUTHORIZED', 'invalid webhook signature');
  return { timestamp };
}

/** The purchase event body. Unknown event types are acknowledged and ignored. Built on the first webhook (z.lazy). */
export const PurchaseEventSchema = z.lazy(() =>
  z.object({
    id: z.string().min(1).max(200),
    type: z.string().min(1).max(100),
    data: z
      .object({
        userId: z.string().min(1).max(320),
        tokens: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
        tokenType: z.enum(BALANCE_TYPES),
        reference: z.string().max(200).optional(),
        amountCents: z.number().int().min(0).optional(),
        currency: z.string().max(10).optional(),
      })
      .optional(),
  }),
);
export type PurchaseEvent = z.infer<typeof PurchaseEventSchema>;

export const PURCHASE_EVENT_TYPE = 'purchase.completed';

export interface PurchaseWebhookResult {
  /** HTTP status the transport should answer with. */
  status: 200;
  body: { received: true; applied: boolean; replay?: true; ignored?: true };
}

/**
 * Verify, parse and apply a purchase webhook: credits `data.tokens` of `data.tokenType` to
 * `data.userId` once per event id (a redelivery answers 200 and changes nothing). Throws
 * CoreError: NOT_CONFIGURED without billing.webhookSecret, UNAUTHORIZED on a bad signature or
 * stale timestamp, BAD_REQUEST on a malformed body, CONFLICT when an event id is reused for
 * another user or amount.
 */
export async function handlePurchaseWebhook(
  runtime: PurchaseWebhookDeps,
  req: { rawBody: string | Uint8Array; signatureHeader: string | null | undefined; timestampHeader: string | null | undefined },
): Promise<PurchaseWebhookResult> {
  const { webhookSecret, webhookToleranceSec } = runtime.config.billing;
  if (!webhookSecret) throw new CoreError('NOT_CONFIGURED', 'the purchase webhook is off: set billing.webhookSecret');
  verifyPurchaseWebhook({ ...req, secret: webhookSecret, toleranceSec: webhookToleranceSec });
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof req.rawBody === 'string' ? req.rawBody : Buffer.from(req.rawBody).toString('utf8'));
  } catch {
    throw new CoreError('BAD_REQUEST', 'webhook body is not JSON');
  }
  const event = PurchaseEventSchema.safeParse(parsed);
  if (!event.success)
    throw new CoreError('BAD_REQUEST', 'webhook body does not match the purchase event schema', {
      details: { issues: event.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) },
    });
  const { id, type, data } = event.data;
  if (type !== PURCHASE_EVENT_TYPE || !data) return { status: 200, body: { received: true, applied: false, ignored: true } };

  // One event id credits one user: its claim is global (not per user), recorded in the credit's
  // own transaction, so a reused id can neither credit someone else nor credit twice.
  const result = await runtime.billing.credit(
    {
      userId: data.userId,
      tokens: data.tokens,
      type: data.tokenType,
      idempotencyKey: `webhook:${id}`,
      source: 'webhook',
      note: {
        eventId: id,
        ...(data.reference ? { reference: data.reference } : {}),
        ...(data.amountCents !== undefined ? { amountCents: data.amountCents } : {}),
        ...(data.currency ? { currency: data.currency } : {}),
      },
    },
    {
      key: `webhook:event:${encodeURIComponent(id)}`,
      fingerprint: JSON.stringify([data.userId, data.tokenType, data.tokens]),
      conflictMessage: 'this event id was already used for a different purchase',
    },
  );
  runtime.logger.info('billing: purchase webhook', { eventId: id, userId: data.userId, tokens: data.tokens, applied: result.applied });
  return { status: 200, body: result.applied ? { received: true, applied: true } : { received: true, applied: false, replay: true } };
}
