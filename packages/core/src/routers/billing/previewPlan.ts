import { z } from '../../lib/zod.js';
import type { ProviderId } from '../../config/sections/ai.js';
import type { AiService } from '../../services/ai/AiService.js';
import type { BillingService } from '../../services/billing/BillingService.js';
import type { ConsumptionPlan } from '../../services/billing/planConsumption.js';

/** The model a preview prices (the provider's default model when absent), as ai.generateText takes it. */
export const previewModelInput = z.string().min(1).max(200).optional();

/**
 * Who would pay for a call, budget included: billing.planConsumption and
 * user.checkRequestEligibility. The budget is checked with the rule the reservation enforces
 * (periodSpend's budgetRefusal) on the call's worst cost at the pricing table's prices, so a
 * preview shows a call the budget would refuse as not viable, with the refusal's figures.
 */
export function previewPlan(
  ctx: { ai: Pick<AiService, 'previewCostUsd'>; billing: Pick<BillingService, 'plan'> },
  userId: string,
  input: { estimatedTokens: number; hasApiKey: boolean; provider?: ProviderId | undefined; model?: string | undefined },
): Promise<ConsumptionPlan> {
  const worstCostUsd = input.hasApiKey ? null : ctx.ai.previewCostUsd(input.provider, input.model, input.estimatedTokens);
  return ctx.billing.plan(userId, input.estimatedTokens, {
    hasApiKey: input.hasApiKey,
    provider: input.provider,
    ...(input.hasApiKey ? {} : { budget: { worstCostUsd } }),
  });
}
