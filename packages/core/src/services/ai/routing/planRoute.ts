import type { ProviderId } from '../../../config/sections/ai.js';
import { CoreError } from '../../../kernel/CoreError.js';
import type { Identity } from '../../../kernel/identity.js';
import type { Metering } from '../../metering/Metering.js';
import type { Routable } from './RouteSlot.js';
import type { Routing } from './Routing.js';

/**
 * A route's plan for one call (Routing.plan), keyed by the request's own key when it carries
 * one. `refused`: the platform-keyed plan refused the call (every target full or cooling down)
 * and `planned` is the caller-keyed plan instead, for a signed-in caller whose stored key
 * may pay (docs/ai.md#routes): the call goes on only if billing pays it with that key
 * (`storedKeyPaysOrRefuse`, and the hold's own decision refusing the platform with `refused`);
 * otherwise a call with fallbacks goes on to them (`planned` empty), one without gets `refused`.
 */
export interface RoutePlan<T> {
  planned: T[];
  refused?: CoreError;
}

/** What planRoute knows of the call. */
export interface RouteCall {
  /** The request carries its own provider key. */
  ownKey: boolean;
  /** The call has fallbacks: a route with nothing available gives way to them (an empty plan). */
  fallbacks: boolean;
  identity: Identity | null;
  metering: Metering;
  /** Whether a provider accepts callers' own keys (ai.byokProviders): a caller-keyed plan has only such targets. */
  byok: (provider: ProviderId) => boolean;
}

/** Why a route's plan refused a call: its capacity or its cooldowns. */
const ROUTE_REFUSALS = new Set(['route_at_capacity', 'route_unavailable']);

/**
 * The plan of a route call: its own key's, else the platform's, else (refused) a stored key's,
 * else (with fallbacks) none.
 */
export async function planRoute<T extends Routable>(routing: Routing, name: string, targets: T[], call: RouteCall): Promise<RoutePlan<T>> {
  const onEmpty = call.fallbacks ? 'none' : 'throw';
  // A caller's key goes only to targets that accept one (none: the hold's byok_not_allowed says so).
  const keyed = targets.filter((t) => call.byok(t.provider));
  if (call.ownKey) return { planned: await routing.plan(name, keyed.length > 0 ? keyed : targets, onEmpty, 'caller') };
  try {
    return { planned: await routing.plan(name, targets, 'throw', 'server') };
  } catch (err) {
    // Rare (the route refuses): only now is a stored key worth asking about, with or without
    // fallbacks (the caller's own key for the route comes before another model or the platform).
    const refusal = err instanceof CoreError && ROUTE_REFUSALS.has(String(err.details?.reason));
    if (!refusal) throw err;
    const asked = call.identity && call.metering.storedKeyWouldPay && keyed.length > 0;
    const planned = asked ? await routing.plan(name, keyed, 'none', 'caller') : [];
    if (planned.length > 0) return { planned, refused: err };
    if (call.fallbacks) return { planned: [] };
    throw err;
  }
}

/**
 * A call planned past the deployments' capacity on the caller's stored key (`refused`): goes on
 * only when billing would pay it with the caller's stored key for one of `providers` (the plan's
 * first target's, then the route's others; each accepting own keys, asked in turn), else the
 * route's refusal stands (or, with fallbacks, the caller catches it and takes them).
 */
export async function storedKeyPaysOrRefuse(
  metering: Metering,
  refused: CoreError | undefined,
  q: { identity: Identity | null; providers: readonly ProviderId[]; estimatedTokens: number },
): Promise<void> {
  if (!refused) return;
  const { identity, estimatedTokens } = q;
  for (const provider of identity ? q.providers : []) {
    if (await metering.storedKeyWouldPay?.({ identity: identity!, provider, estimatedTokens })) return;
  }
  throw refused;
}

/** The payer rule of such a call's hold: the platform may not pay it (its deployments refused it). */
export function platformRefused(refused: CoreError | undefined): (mode: 'platform' | 'byok') => void {
  return (mode) => {
    if (refused && mode === 'platform') throw refused;
  };
}

/**
 * A route call the platform's plan accepted and whose hold billing paid with the caller's stored
 * key for `provider` (its consumption order, or its budget moving the call to that key): planned
 * again for the caller's keys (docs/ai.md#routes), as a call with its own key in the request is:
 * past the deployments' rpm/tpm and the cooldowns a 429 to the server's key left, in the
 * strategy's order, with a target of `provider` among those taken. `accepted`: the platform's
 * plan, whose first target the hold was made for (no longer pending for least-busy).
 */
export async function planForStoredKey<T extends Routable>(
  routing: Routing,
  name: string,
  targets: T[],
  accepted: T[],
  provider: ProviderId,
): Promise<T[]> {
  if (accepted[0]) routing.unplan(accepted[0]);
  const planned = await routing.plan(name, targets, 'none', 'caller', provider);
  // Never empty: the target the hold was made for is available to the platform, so to the caller's key too.
  return planned.length === 0 ? accepted : planned;
}
