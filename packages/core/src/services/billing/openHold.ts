import { CoreError } from '../../kernel/CoreError.js';
import type { Logger } from '../../kernel/Logger.js';
import type { KeyLimits } from '../apiKeys/KeyLimits.js';
import type { Hold, HoldRequest } from '../ai/Metering.js';
import { CallHold, type HoldLedger, type KeySlot } from './CallHold.js';
import type { Decision, DecideParams, Reservation, ReserveParams } from './types.js';

/** Billing's steps a hold is made of. */
export interface HoldBilling extends HoldLedger {
  decide(p: DecideParams): Promise<Decision>;
  reserve(p: ReserveParams): Promise<Reservation>;
}

/** The details of a PAYMENT_REQUIRED that `reserve` threw because of the user's budget, else undefined. */
export function budgetRefusalOf(err: unknown): object | undefined {
  if (!(err instanceof CoreError) || err.appCode !== 'PAYMENT_REQUIRED') return undefined;
  const d = err.details as { reason?: unknown; period?: unknown } | undefined;
  return d && typeof d.period === 'string' && (d.reason === 'budget_exceeded' || d.reason === 'model_not_priced') ? d : undefined;
}

const byokNotAllowed = (provider: string) => new CoreError('FORBIDDEN', `own API keys are not accepted for provider ${provider}`, { details: { reason: 'byok_not_allowed', provider } });

function allows(req: HoldRequest, mode: 'platform' | 'byok'): boolean {
  try {
    req.mayPay?.(mode);
    return true;
  } catch {
    return false;
  }
}

/**
 * The payer decision of one metered call, in one place (see Metering.hold): who pays, the
 * API key's limits, the reservation, and the one re-decision when the budget refuses it.
 */
export async function openHold(billing: HoldBilling, limits: KeyLimits | undefined, logger: Logger, req: HoldRequest): Promise<Hold> {
  const { identity, provider, estimatedTokens, requestId } = req;
  if (req.ownKey !== undefined && !req.byokAllowed) throw byokNotAllowed(provider);
  const grant = identity?.apiKey;
  // An API key's tokens per minute admit the call before anything is read.
  if (grant && limits) await limits.admitTokens(grant);
  const ip = req.ip ? { ip: req.ip } : {};
  const decision = await billing.decide({ identity, provider, estimatedTokens, apiKeyProvided: req.ownKey !== undefined, ...ip });
  const byok = (apiKey: string): Hold => {
    req.mayPay?.('byok');
    return new CallHold(billing, logger, 'byok', apiKey, { identity, requestId }, grant && limits ? { release: async () => undefined, count: (t) => limits.countTokens(grant, t) } : undefined);
  };
  if (req.ownKey !== undefined) return byok(req.ownKey);
  if (decision.mode === 'byok') {
    if (!decision.apiKey) throw new CoreError('INTERNAL', 'billing chose a stored key but returned none');
    if (!req.byokAllowed) throw byokNotAllowed(provider);
    return byok(decision.apiKey);
  }
  if (!req.serverPays) {
    throw new CoreError('BAD_REQUEST', `this server does not pay for provider ${provider}; send your own apiKey`, { details: { reason: 'provider_not_served', provider } });
  }
  // Before anything is held: a server prompt never goes to a caller's own account (and vice versa).
  req.mayPay?.('platform');
  let slot: KeySlot | undefined;
  try {
    if (grant && limits) {
      const release = await limits.acquire(grant);
      slot = { release, count: (t) => limits.countTokens(grant, t) };
    }
    const reservation = await billing.reserve({ identity, tokens: estimatedTokens, requestId, decision, ...ip, ...(req.costUsd !== undefined ? { costUsd: req.costUsd } : {}) });
    return new CallHold(billing, logger, 'platform', undefined, { identity, requestId, reservation }, slot);
  } catch (err) {
    await slot?.release();
    // The budget is enforced in the reservation's transaction (so concurrent calls cannot
    // overspend it); when it refuses, decide once more with the platform refused: the caller's
    // stored key where their order allows it (not platform spend), else the refusal.
    const budgetRefusal = budgetRefusalOf(err);
    if (!budgetRefusal || !req.byokAllowed || !allows(req, 'byok')) throw err;
    const again = await billing.decide({ identity, provider, estimatedTokens, apiKeyProvided: false, budgetRefusal, ...ip });
    if (again.mode !== 'byok' || !again.apiKey) throw err;
    return byok(again.apiKey);
  }
}
