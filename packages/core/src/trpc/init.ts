import { initTRPC } from '@trpc/server';
import superjson from 'superjson';
import { ZodError } from 'zod';
import { CoreError } from '../errors/CoreError.js';
import type { Context } from './context.js';
import type { ProcedureMeta } from './meta.js';

/**
 * The single tRPC instance. Every router, built-in or custom, is made from it, so every
 * entry point runs the same middleware chain.
 */
export const t = initTRPC
  .context<Context>()
  .meta<ProcedureMeta>()
  .create({
    transformer: superjson,
    // Never send stacks; expose our app code and zod issues for invalid input.
    errorFormatter({ shape, error }) {
      const data: Record<string, unknown> = { code: shape.data.code, httpStatus: shape.data.httpStatus };
      if (shape.data.path) data.path = shape.data.path;
      if (error instanceof CoreError) {
        data.appCode = error.appCode;
        if (error.details) data.details = error.details;
      }
      if (error.cause instanceof ZodError) data.issues = error.cause.issues;
      const message = error.code === 'INTERNAL_SERVER_ERROR' && !(error instanceof CoreError) ? 'internal error' : shape.message;
      return { ...shape, message, data };
    },
  });

export const router = t.router;
export const middleware = t.middleware;
export const mergeRouters = t.mergeRouters;
export const createCallerFactory = t.createCallerFactory;
