import type { Runtime } from '../runtime/Runtime.js';
import { t } from './init.js';

/**
 * A tRPC middleware that adds the services one namespace uses to its procedures' `ctx` (the way
 * tRPC's docs give procedures what they need: a base procedure per namespace, its middleware
 * extending the context). `pick` names those services; its answer is made once per runtime and
 * reused, so a call pays for one lookup and tRPC's context merge, nothing else.
 *
 * @example
 * const billingProcedure = protectedProcedure.use(provide((r) => ({ billing: r.billing })));
 * billingProcedure.query(({ ctx }) => ctx.billing.balances(ctx.identity.sub));
 */
export function provide<S extends object>(pick: (runtime: Runtime) => S) {
  const made = new WeakMap<Runtime, S>();
  return t.middleware(({ ctx, next }) => {
    let services = made.get(ctx.runtime);
    if (!services) made.set(ctx.runtime, (services = pick(ctx.runtime)));
    return next({ ctx: services });
  });
}
