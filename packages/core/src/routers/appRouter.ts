import { lazy, type AnyRouter } from '@trpc/server';
import { mergeRouters, router } from '../pipeline/init.js';
import { mcpRouter } from './mcp/mcpRouter.js';
import type { BuiltInNamespace } from '../kernel/namespaces.js';

const namespaces = () => import('./lazyNamespaces.js');

/**
 * The built-in namespaces. All but `mcp` are built on first use (tRPC's `lazy()`, together in one
 * chunk), so a server that has not answered an API call yet holds none of their procedures,
 * schemas or code (docs/architecture.md#lazy-namespaces). `mcp` stays eager: it carries the
 * built-in prompts, which the prompt registry reads at start-up. `loadRouter` (pipeline/invoke.ts)
 * builds them all; every entry point awaits it before its first call.
 */
export const builtinRouter = router({
  ai: lazy(() => namespaces().then((m) => m.aiRouter)),
  mcp: mcpRouter,
  admin: lazy(() => namespaces().then((m) => m.adminRouter)),
  system: lazy(() => namespaces().then((m) => m.systemRouter)),
  auth: lazy(() => namespaces().then((m) => m.authRouter)),
  billing: lazy(() => namespaces().then((m) => m.billingRouter)),
  user: lazy(() => namespaces().then((m) => m.userRouter)),
  keys: lazy(() => namespaces().then((m) => m.keysRouter)),
  gateway: lazy(() => namespaces().then((m) => m.gatewayRouter)),
} satisfies Record<BuiltInNamespace, AnyRouter | (() => Promise<AnyRouter>)>);

export type AppRouter = typeof builtinRouter;

/** customRouters as config takes them: namespace → router. */
export type CustomRouters = Record<string, AnyRouter>;

/**
 * Built-in namespaces plus the operator's customRouters (each under its own namespace), merged
 * with tRPC's public `mergeRouters`, so the result's type carries the custom namespaces: a
 * `@trpc/client` typed with `AppRouterWith<typeof customRouters>` sees `weather.forecast`.
 * The lazy namespaces stay lazy in the merged router (each merged router loads its own).
 */
export function createAppRouter<C extends CustomRouters = {}>(customRouters: C = {} as C) {
  return mergeRouters(builtinRouter, router(customRouters));
}

/** The router type of a server built with these customRouters (what a tRPC client is typed with). */
export type AppRouterWith<C extends CustomRouters> = ReturnType<typeof createAppRouter<C>>;
