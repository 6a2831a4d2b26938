import { CoreError } from '../../kernel/CoreError.js';
import type { ResolvedConfig } from '../../config/schema.js';
import type { Storage } from '../../kernel/Storage.js';
import type { Identity } from '../../kernel/identity.js';
import { rateLimitCaller } from './RateLimiter.js';
import { countInWindow } from './WindowLeases.js';

/**
 * Count one provider key check (`ai.keyChecks`) against the caller's address and, when signed
 * in, its identity; throws RATE_LIMITED (with Retry-After) when either budget is spent. Always
 * on, whatever `mcp.rateLimiting` says. Fails closed: when the counter store cannot be reached
 * no key is checked (UNAVAILABLE), since an uncounted check is exactly the relay this prevents.
 */
export async function countKeyCheck(
  runtime: { config: Pick<ResolvedConfig, 'ai'>; storage: Pick<Storage, 'increment'> },
  identity: Identity | null,
  ip: string,
): Promise<void> {
  const { windowMs, maxPerIdentity, maxPerAddress } = runtime.config.ai.keyChecks;
  const budgets: Array<[string, number]> = [[rateLimitCaller(null, ip), maxPerAddress]];
  if (identity) budgets.push([rateLimitCaller(identity, ip), maxPerIdentity]);
  for (const [caller, limit] of budgets) {
    let count: number;
    let retryAfter: number;
    try {
      ({ count, resetSec: retryAfter } = await countInWindow(runtime.storage, `rl:keyChecks:${caller}`, windowMs));
    } catch {
      throw new CoreError('UNAVAILABLE', 'key checks are unavailable right now; retry later');
    }
    if (count > limit) {
      throw new CoreError('RATE_LIMITED', `too many key checks: ${limit} per ${Math.round(windowMs / 1000)} s; retry in ${retryAfter} s`, {
        details: { kind: 'keyChecks', limit, retryAfterSec: retryAfter },
        headers: { 'Retry-After': String(retryAfter) },
      });
    }
  }
}
