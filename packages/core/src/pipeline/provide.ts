import type { Runtime } from '../runtime/Runtime.js';
import { servicesMiddleware } from './procedures.js';

/**
 * A tRPC middleware that adds the services one namespace uses to its procedures' `ctx` (the way
 * tRPC's docs give procedures what they need): a base procedure per namespace, its middleware
 * extending the context. `pick` names those services from the server's runtime; its answer is
 * made once per runtime and reused. Internal (the runtime is not public API): the middleware
 * itself is procedures.ts's servicesMiddleware, so a call crosses no file of this one.
 *
 * @example
 * const billingProcedure = protectedProcedure.use(provide((r) => ({ billing: r.billing })));
 * billingProcedure.query(({ ctx }) => ctx.billing.balances(ctx.identity.sub));
 */
export const provide: <S extends object>(pick: (runtime: Runtime) => S) => ReturnType<typeof servicesMiddleware<S>> = servicesMiddleware;
