import type { Metering, Reservation } from '../ai/Metering.js';
import type { KeyLimits } from './KeyLimits.js';

/**
 * The metering the AI service talks to, with an API key's own limits around billing's: tokens
 * per minute admitted at the payer decision and counted when a call is charged or recorded,
 * and a concurrent-call slot held from the reservation to its settle or release (platform-paid
 * calls; a BYOK call holds no reservation). The key's budget is not here: it is checked in the
 * reservation's own transaction (billing).
 */
export function keyLimitedMetering(inner: Metering, limits: KeyLimits, onTokens?: (payer: 'platform' | 'byok', tokens: number) => void): Metering {
  const open = new WeakMap<Reservation, { release: () => Promise<void>; count: (tokens: number) => Promise<void> }>();
  const close = async (r: Reservation) => {
    const o = open.get(r);
    open.delete(r);
    await o?.release();
    return o;
  };
  return {
    async decide(args) {
      const grant = args.identity?.apiKey;
      if (grant && !args.budgetRefusal) await limits.admitTokens(grant);
      return inner.decide(args);
    },
    async reserve(args) {
      const grant = args.identity?.apiKey;
      if (!grant) return inner.reserve(args);
      const release = await limits.acquire(grant);
      try {
        const r = await inner.reserve(args);
        open.set(r, { release, count: (t) => limits.countTokens(grant, t) });
        return r;
      } catch (err) {
        await release();
        throw err;
      }
    },
    async settle(reservation, usage) {
      try {
        const settled = await inner.settle(reservation, usage);
        const o = open.get(reservation);
        if (o) {
          onTokens?.('platform', settled.tokensUsed);
          await o.count(settled.tokensUsed).catch(() => undefined);
        }
        return settled;
      } finally {
        await close(reservation);
      }
    },
    async release(reservation, reason) {
      try {
        await inner.release(reservation, reason);
      } finally {
        await close(reservation);
      }
    },
    async recordByokUsage(args) {
      await inner.recordByokUsage(args);
      const grant = args.identity?.apiKey;
      if (grant) {
        onTokens?.('byok', args.tokensUsed);
        await limits.countTokens(grant, args.tokensUsed).catch(() => undefined);
      }
    },
  };
}
