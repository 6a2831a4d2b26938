import type { AnyRouter } from '@trpc/server';
import { router } from '../trpc/init.js';
import { adminRouter } from './admin/adminRouter.js';
import { mcpRouter } from './mcp/mcpRouter.js';
import { systemRouter } from './system/systemRouter.js';

/** The built-in namespaces. */
export const builtinRouter = router({
  mcp: mcpRouter,
  admin: adminRouter,
  system: systemRouter,
});

export type AppRouter = typeof builtinRouter;

/** Built-in namespaces plus the operator's customRouters (each under its own namespace). */
export function createAppRouter(customRouters: Record<string, unknown>): AnyRouter {
  if (Object.keys(customRouters).length === 0) return builtinRouter;
  return router({ ...builtinRouter._def.record, ...(customRouters as Record<string, AnyRouter>) });
}
