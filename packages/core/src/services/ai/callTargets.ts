import type { ProviderId } from '../../config/sections/ai.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { CallDeps, PreparedCall, TextCall } from './prepareCall.js';
import { isPriced } from './callModel.js';
import type { RouteSlot } from './routing/RouteSlot.js';

/**
 * One provider/model to try, with the key that pays for it. `storedKey`: a BYOK fallback on
 * another provider, paid with the caller's stored key for it, read only when the target is
 * reached (readyTarget), so a call that needs no fallback never opens the vault.
 */
export type Target = PreparedCall & { storedKey?: true };

/** What the attempt loop needs of a target (text calls' Target, an embedding call's own). */
export interface CallTarget {
  provider: ProviderId;
  model: string;
  requestId: string;
  apiKey: string;
  storedKey?: true;
  /** The route target it is (ai.routes): admitted, counted and cooled down by the routing. */
  route?: RouteSlot | undefined;
}

/** A target that did not serve the call, and why (reported in `data.attempts`). */
export interface Attempt {
  provider: ProviderId;
  model: string;
  /**
   * The upstream failure (rate_limited, upstream_5xx, timeout, ...), `circuit_open`, `no_stored_key`, or a route target's `cooling_down` /
   * `rate_limited` (its rpm).
   */
  reason: string;
}

/**
 * Failures worth trying the next target for; anything else is the request's own problem. A 2xx
 * that cannot be read (`malformed_response`: not JSON, an HTML page from a proxy, plain JSON for a
 * stream) is the target's failure, not the request's: another target may answer it.
 */
const RETRYABLE = new Set(['rate_limited', 'upstream_5xx', 'timeout', 'unreachable', 'connection_lost', 'malformed_response']);

export function isRetryable(err: unknown): err is CoreError {
  return err instanceof CoreError && RETRYABLE.has(String(err.details?.reason));
}

/**
 * The targets of a call: the requested one, then the fallbacks it may reach (reachableModels:
 * the model rules, decided with its price in prepareCall). A fallback is kept only when it can
 * serve this call with the same payer and the same guarantees: a key of the same kind (a platform
 * call needs a server key for the fallback's provider; a BYOK call uses its own key within its
 * provider, and on another provider the signed-in caller's stored key for it, when that provider
 * accepts own keys), and, when a money limit applies to the call (the hold says so), a price: an
 * unpriced model has no bound a money limit could check, so it is skipped here as it is refused
 * when asked for directly.
 */
export function callTargets(deps: CallDeps, p: PreparedCall, call: TextCall): Target[] {
  const { providers } = deps;
  const out: Target[] = [p];
  for (const { provider, model, route } of p.reachable.slice(1)) {
    if (p.hold.usdLimited && !isPriced(deps, { provider, model })) continue;
    if (p.mode === 'platform') {
      const apiKey = providers.serverKey(provider);
      if (apiKey) out.push({ ...p, provider, model, route, apiKey });
    } else if (provider === p.provider) {
      out.push({ ...p, provider, model, route });
    } else if (deps.storedKey && call.identity && providers.isByokProvider(provider)) {
      out.push({ ...p, provider, model, route, apiKey: '', storedKey: true });
    }
  }
  return out;
}

/** A target with its key: a stored-key fallback reads the vault now; undefined when no key is stored. */
export async function readyTarget<T extends CallTarget>(
  deps: Pick<CallDeps, 'storedKey' | 'logger'>,
  t: T,
  call: TextCall,
): Promise<T | undefined> {
  if (!t.storedKey) return t;
  const apiKey = await deps.storedKey!(call.identity!.sub, t.provider).catch((err: unknown) => {
    deps.logger.warn('ai: reading a stored key for a fallback failed', {
      requestId: t.requestId,
      provider: t.provider,
      error: err instanceof Error ? err.message : String(err),
    });
    return undefined;
  });
  if (!apiKey) return undefined;
  const { storedKey: _, ...rest } = t;
  return { ...rest, apiKey } as T;
}
