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
 * (`storedKeyPaysOrRefuse`, and the hold's own decision refusing the platform with `refused`).
 */
export interface RoutePlan<T> {
  planned: T[];
  refused?: CoreError;
}

/** Why a route's plan refused a call: its capacity or its cooldowns. */
const ROUTE_REFUSALS = new Set(['route_at_capacity', 'route_unavailable']);

/** The plan of a route call: its own key's, else the platform's, else (refused) a stored key's. */
export async function planRoute<T extends Routable>(
  routing: Routing,
  name: string,
  targets: T[],
  onEmpty: 'throw' | 'none',
  call: { ownKey: boolean; identity: Identity | null; metering: Metering },
): Promise<RoutePlan<T>> {
  if (call.ownKey) return { planned: await routing.plan(name, targets, onEmpty, 'caller') };
  try {
    return { planned: await routing.plan(name, targets, onEmpty, 'server') };
  } catch (err) {
    // Rare (the route refuses): only now is a stored key worth asking about.
    const refusal = err instanceof CoreError && ROUTE_REFUSALS.has(String(err.details?.reason));
    if (!refusal || !call.identity || !call.metering.storedKeyWouldPay) throw err;
    const planned = await routing.plan(name, targets, 'none', 'caller');
    if (planned.length === 0) throw err;
    return { planned, refused: err };
  }
}

/**
 * A call planned past the deployments' capacity on the caller's stored key (`refused`): goes on
 * only when `provider` accepts own keys and billing would pay it with the caller's key for it,
 * else the route's refusal stands.
 */
export async function storedKeyPaysOrRefuse(
  metering: Metering,
  refused: CoreError | undefined,
  q: { identity: Identity | null; provider: ProviderId; estimatedTokens: number; byokAllowed: boolean },
): Promise<void> {
  if (!refused) return;
  const { identity, provider, estimatedTokens } = q;
  if (!identity || !q.byokAllowed || !(await metering.storedKeyWouldPay?.({ identity, provider, estimatedTokens }))) throw refused;
}

/** The payer rule of such a call's hold: the platform may not pay it (its deployments refused it). */
export function platformRefused(refused: CoreError | undefined): (mode: 'platform' | 'byok') => void {
  return (mode) => {
    if (refused && mode === 'platform') throw refused;
  };
}
