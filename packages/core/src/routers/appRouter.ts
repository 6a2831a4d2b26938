import type { AnyRouter } from '@trpc/server';
import { router } from '../trpc/init.js';
import { adminRouter } from './admin/adminRouter.js';
import { aiRouter } from './ai/aiRouter.js';
import { authRouter } from './auth/authRouter.js';
import { billingRouter } from './billing/billingRouter.js';
import { mcpRouter } from './mcp/mcpRouter.js';
import { systemRouter } from './system/systemRouter.js';
import { userRouter } from './user/userRouter.js';

/** The built-in namespaces. */
export const builtinRouter = router({
  ai: aiRouter,
  mcp: mcpRouter,
  admin: adminRouter,
  system: systemRouter,
  auth: authRouter,
  billing: billingRouter,
  user: userRouter,
});

export type AppRouter = typeof builtinRouter;

/** Built-in namespaces plus the operator's customRouters (each under its own namespace). */
export function createAppRouter(customRouters: Record<string, AnyRouter>): AnyRouter {
  if (Object.keys(customRouters).length === 0) return builtinRouter;
  return router({ ...builtinRouter._def.record, ...customRouters });
}
