import type { ProviderId } from '../../config/sections/ai.js';
import { otel, tracingActive } from '../../observability/tracing.js';
import type { Charge, Hold, UsageMetadata } from '../metering/Metering.js';
import type { CallDeps, PreparedCall, TextCall } from './prepareCall.js';
import type { RouteSlot } from './routing/RouteSlot.js';

/** What the served target reported (or what the engine counted for it). */
export interface CallUsage {
  tokensUsed: number;
  inputTokens?: number | undefined;
  outputTokens?: number | undefined;
}

/** A call's price at the pricing table: undefined when its model has no price. */
export type Pricing = (provider: ProviderId, model: string, usage: CallUsage) => number | undefined;

/**
 * The one accounting step of every AI call, once per call: usage → price → the hold's
 * settlement (a platform charge or a BYOK record) → the usage metrics
 * (`ai_backend_tokens_total`, `ai_backend_cost_usd_total`, an API key's tokens).
 */
export async function accountCall(
  deps: Pick<CallDeps, 'metrics' | 'routing'>,
  hold: Hold,
  price: Pricing,
  call: Pick<TextCall, 'identity'>,
  served: { provider: ProviderId; model: string; metadata?: UsageMetadata | undefined; route?: RouteSlot | undefined },
  usage: CallUsage,
): Promise<Charge> {
  const costUsd = price(served.provider, served.model, usage);
  const charge = await hold.settle({
    tokensUsed: usage.tokensUsed,
    provider: served.provider,
    model: served.model,
    metadata: served.metadata ?? {},
    ...(costUsd !== undefined ? { costUsd } : {}),
  });
  const [payer, tokens, cost] =
    'tokenUsage' in charge
      ? (['platform', charge.tokenUsage.tokensUsed, costUsd] as const)
      : (['byok', charge.usageInfo.tokensUsed, charge.usageInfo.estimatedCostUsd] as const);
  const { metrics } = deps;
  // A route target's tokens per minute, counted across instances (what the upstream reported);
  // only the platform's: a call paid with a caller's own key used none of the deployment's tpm.
  if (served.route && payer === 'platform') void deps.routing?.used(served.route, usage.tokensUsed);
  if (metrics) {
    metrics.metered(served.provider, served.model, payer, tokens, cost);
    if (call.identity?.apiKey) metrics.apiKeyTokens(payer, tokens);
  }
  // The procedure's span (active here, streams included) carries what the call was charged.
  // Without a registered SDK there is no span to annotate, and the tracing API stays unloaded.
  if (tracingActive())
    otel()
      .trace.getActiveSpan()
      ?.setAttributes({ 'ai_backend.payer': payer, 'ai_backend.tokens': tokens, 'gen_ai.request.model': served.model });
  return charge;
}

/** The price of a text call's usage: reported tokens, else the call's bounds (never less than it may have cost). */
export function textPricing(deps: Pick<CallDeps, 'providers'>, p: Pick<PreparedCall, 'inputEstimate' | 'maxTokens'>): Pricing {
  return (provider, model, usage) =>
    deps.providers.models.estimateCostUsd(provider, model, usage.inputTokens ?? p.inputEstimate, usage.outputTokens ?? p.maxTokens);
}
