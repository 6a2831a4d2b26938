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
  /** Input tokens' worth billed above the input price (Anthropic's cache writes, WireUsage): priced, not charged as tokens. */
  cacheWriteExtra?: number | undefined;
  /** Input tokens (of `inputTokens`) read from the provider's prompt cache: priced at the model's `cachedInputRatio`, charged as tokens. */
  cachedInputTokens?: number | undefined;
}

/** A call's price at the pricing table: undefined when its model has no price. */
export type Pricing = (provider: ProviderId, model: string, usage: CallUsage) => number | undefined;

/**
 * The one accounting step of every AI call, once per call: usage and its price (`costUsd`,
 * undefined when the model has none; computed once by the caller, who hands the same figure to the
 * response cache) → the hold's settlement (a platform charge or a BYOK record) → the usage metrics
 * (`ai_backend_tokens_total`, `ai_backend_cost_usd_total`, an API key's tokens).
 */
export async function accountCall(
  deps: Pick<CallDeps, 'metrics' | 'routing'>,
  hold: Hold,
  costUsd: number | undefined,
  call: Pick<TextCall, 'identity'>,
  served: { provider: ProviderId; model: string; metadata?: UsageMetadata | undefined; route?: RouteSlot | undefined },
  usage: CallUsage,
): Promise<Charge> {
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

/**
 * The price of a text call's usage: reported tokens (and what of the input is billed above or below
 * the input price: cache writes, cached input), else the call's bounds (never less than it may have
 * cost: its cost bound's input).
 */
export function textPricing(deps: Pick<CallDeps, 'providers'>, p: Pick<PreparedCall, 'costInput' | 'maxTokens'>): Pricing {
  return (provider, model, usage) =>
    usage.inputTokens === undefined
      ? deps.providers.models.estimateCostUsd(provider, model, p.costInput, usage.outputTokens ?? p.maxTokens)
      : deps.providers.models.estimateCostUsd(provider, model, usage.inputTokens, usage.outputTokens ?? p.maxTokens, {
          readTokens: usage.cachedInputTokens,
          writeExtra: usage.cacheWriteExtra,
        });
}
