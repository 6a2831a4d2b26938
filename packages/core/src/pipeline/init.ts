import { initTRPC } from '@trpc/server';
import superjson from 'superjson';
import { formatTrpcError } from './wireError.js';
import type { Context } from './context.js';
import type { ProcedureMeta } from './meta.js';

/**
 * The single tRPC instance. Every router, built-in or custom, is made from it, so every
 * entry point runs the same middleware chain.
 */
export const t = initTRPC.context<Context>().meta<ProcedureMeta>().create({
  transformer: superjson,
  // Never tRPC's development shape: it reads every error's `stack` to put it in `data`, which the
  // formatter below drops anyway, and formatting a stack is most of what an error answer costs
  // (each refusal on /trpc paid for one; under vitest's source maps, 8 % of the access matrix's CPU).
  isDev: false,
  // The one error mapper (pipeline/wireError.ts): no stacks, no library messages; our app
  // code, details, Retry-After and zod issues in data, as on /rpc and /mcp.
  errorFormatter: formatTrpcError,
});

export const router = t.router;
export const middleware = t.middleware;
export const mergeRouters = t.mergeRouters;
export const createCallerFactory = t.createCallerFactory;
