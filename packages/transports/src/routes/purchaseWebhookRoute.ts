import type { Handler } from 'hono';
import { CORE_ERROR_TABLE, handlePurchaseWebhook, isCoreError, type PurchaseWebhookDeps } from '@ai-backend/core/internal';

/** Largest webhook body we read; purchase events are small. */
const MAX_WEBHOOK_BYTES = 64 * 1024;

/**
 * POST /webhooks/purchase: the HMAC-signed purchase webhook (headers `x-webhook-signature` and
 * `x-webhook-timestamp`; the shorter `x-signature` / `x-timestamp` are accepted too). Verification and idempotency live in core; this only
 * reads the raw body.
 */
export function purchaseWebhookHandler(getDeps: () => Promise<PurchaseWebhookDeps>): Handler {
  return async (c) => {
    const deps = await getDeps();
    if (Number(c.req.header('content-length') ?? 0) > MAX_WEBHOOK_BYTES) return c.json({ error: 'payload too large' }, 413);
    const rawBody = new Uint8Array(await c.req.arrayBuffer());
    if (rawBody.byteLength > MAX_WEBHOOK_BYTES) return c.json({ error: 'payload too large' }, 413);
    try {
      const result = await handlePurchaseWebhook(deps, {
        rawBody,
        signatureHeader: c.req.header('x-webhook-signature') ?? c.req.header('x-signature'),
        timestampHeader: c.req.header('x-webhook-timestamp') ?? c.req.header('x-timestamp'),
      });
      return c.json(result.body, result.status);
    } catch (err) {
      if (!isCoreError(err)) throw err;
      const status = CORE_ERROR_TABLE[err.appCode].http as 400;
      return c.json({ error: err.message, code: err.appCode }, status);
    }
  };
}
