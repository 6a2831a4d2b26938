import type { AnyRouter } from '@trpc/server';
import { mergeRouters, router } from '../pipeline/init.js';
import { adminRouter } from './admin/adminRouter.js';
import { aiRouter } from './ai/aiRouter.js';
import { authRouter } from './auth/authRouter.js';
import { billingRouter } from './billing/billingRouter.js';
import { mcpRouter } from './mcp/mcpRouter.js';
import { systemRouter } from './system/systemRouter.js';
import { userRouter } from './user/userRouter.js';
import { keysRouter } from './keys/keysRouter.js';
import type { BuiltInNamespace } from '../kernel/namespaces.js';

/** The built-in namespaces. */
export const builtinRouter = router({
  ai: aiRouter,
  mcp: mcpRouter,
  admin: adminRouter,
  system: systemRouter,
  auth: authRouter,
  billing: billingRouter,
  user: userRouter,
  keys: keysRouter,
} satisfies Record<BuiltInNamespace, AnyRouter>);

export type AppRouter = typeof builtinRouter;

/** customRouters as config takes them: namespace → router. */
export type CustomRouters = Record<string, AnyRouter>;

/**
 * Built-in namespaces plus the operator's customRouters (each under its own namespace), merged
 * with tRPC's public `mergeRouters`, so the result's type carries the custom namespaces: a
 * `@trpc/client` typed with `AppRouterWith<typeof customRouters>` sees `weather.forecast`.
 */
export function createAppRouter<C extends CustomRouters = {}>(customRouters: C = {} as C) {
  return mergeRouters(builtinRouter, router(customRouters));
}

/** The router type of a server built with these customRouters (what a tRPC client is typed with). */
export type AppRouterWith<C extends CustomRouters> = ReturnType<typeof createAppRouter<C>>;
