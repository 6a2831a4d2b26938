import type { Metering } from './Metering.js';
import type { Metrics } from '../../observability/Metrics.js';

/**
 * The metering the AI service talks to, with `ai_backend_tokens_total` and
 * `ai_backend_cost_usd_total` counted once a charge or a BYOK record succeeded. Everything else
 * passes through to billing unchanged.
 */
export function observedMetering(billing: Metering, metrics: Metrics | undefined): Metering {
  if (!metrics) return billing;
  return {
    decide: (args) => billing.decide(args),
    reserve: (args) => billing.reserve(args),
    release: (reservation, reason) => billing.release(reservation, reason),
    async settle(reservation, usage) {
      const settled = await billing.settle(reservation, usage);
      metrics.metered(usage.provider, usage.model, 'platform', settled.tokensUsed, usage.costUsd);
      return settled;
    },
    async recordByokUsage(args) {
      await billing.recordByokUsage(args);
      metrics.metered(args.provider, args.model, 'byok', args.tokensUsed, args.estimatedCostUsd);
    },
  };
}
