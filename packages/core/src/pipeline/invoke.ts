import { TRPCError, type AnyRouter, type AnyProcedure } from '@trpc/server';
import type { Context } from './context.js';
import { toTRPCError } from './wireError.js';
import { isAsyncIterable } from '../kernel/streamEvents.js';
import { drainStream } from './drainStream.js';
import type { ProcedureMeta } from './meta.js';

export interface ProcedureInfo {
  path: string;
  type: 'query' | 'mutation' | 'subscription';
  meta: ProcedureMeta | undefined;
  procedure: AnyProcedure;
}

/** Flat map of procedure path → info, computed once per router (once it is loaded). */
const indexCache = new WeakMap<AnyRouter, Map<string, ProcedureInfo>>();
const loading = new WeakMap<AnyRouter, Promise<void>>();

/** Whether some namespace of this router is still a tRPC `lazy()` loader that has not run. */
export function isRouterLoaded(router: AnyRouter): boolean {
  for (const _ in router._def.lazy) return false;
  return true;
}

/**
 * Build every lazily loaded namespace of a router (routers/appRouter.ts), once. Every entry point
 * awaits this before its first call, so the synchronous readers below see the whole router.
 * A namespace that cannot load (its chunk missing from an install, say) fails this promise for
 * good: tRPC memoises each loader's outcome, and so does the module loader.
 */
export function loadRouter(router: AnyRouter): Promise<void> {
  if (isRouterLoaded(router)) return Promise.resolve();
  let p = loading.get(router);
  if (!p) {
    p = (async () => {
      // A loaded namespace may itself hold lazy routers: load until none is left.
      while (!isRouterLoaded(router)) await Promise.all(Object.values(router._def.lazy).map((l) => l.load()));
    })();
    loading.set(router, p);
  }
  return p;
}

function indexOf(router: AnyRouter): Map<string, ProcedureInfo> {
  const index = new Map<string, ProcedureInfo>();
  for (const [path, procedure] of Object.entries(router._def.procedures as Record<string, AnyProcedure>)) {
    index.set(path, { path, type: procedure._def.type, meta: procedure._def.meta as ProcedureMeta | undefined, procedure });
  }
  return index;
}

/**
 * Every procedure of a loaded router. Throws for a router with namespaces not loaded yet: a reader
 * that saw only part of the router would answer NOT_FOUND or decide access without the meta.
 */
export function procedureIndex(router: AnyRouter): Map<string, ProcedureInfo> {
  let index = indexCache.get(router);
  if (!index) {
    if (!isRouterLoaded(router))
      throw new Error(
        `the router has namespaces not loaded yet (${Object.keys(router._def.lazy).join(', ')}): await loadRouter(router) first`,
      );
    index = indexOf(router);
    indexCache.set(router, index);
  }
  return index;
}

/**
 * The procedures built so far (the eager namespaces and customRouters, before loadRouter): for the
 * start-up readers that must not force the lazy namespaces (prompt and resource registries, the
 * tool-name check). Not cached.
 */
export function loadedProcedureIndex(router: AnyRouter): Map<string, ProcedureInfo> {
  return isRouterLoaded(router) ? procedureIndex(router) : indexOf(router);
}

export type InvokeResult = { ok: true; data: unknown } | { ok: false; error: TRPCError };

export interface InvokeOptions {
  /**
   * Hand a streamed result (an async iterable, e.g. ai.streamText) back as is, for an entry
   * point that streams it itself (the OpenAI-compatible endpoint). Default false: the seam reads
   * it to its end (see drainStream).
   */
  stream?: boolean;
}

/**
 * The one invoke seam shared by /rpc, /mcp and /v1 (and usable from code): run a procedure by
 * path through its full middleware chain (auth, rate limits, validation). /trpc reaches the same
 * procedures through tRPC's own fetch handler. Value-returning: never throws.
 */
export async function invoke(
  router: AnyRouter,
  path: string,
  input: unknown,
  ctx: Context,
  opts: InvokeOptions = {},
): Promise<InvokeResult> {
  if (!isRouterLoaded(router)) {
    try {
      await loadRouter(router);
    } catch (cause) {
      return { ok: false, error: toTRPCError(cause) };
    }
  }
  const info = procedureIndex(router).get(path);
  if (!info || info.type === 'subscription') {
    return { ok: false, error: new TRPCError({ code: 'NOT_FOUND', message: `unknown procedure "${path.slice(0, 200)}"` }) };
  }
  try {
    const data = await info.procedure({
      ctx,
      path,
      type: info.type,
      getRawInput: async () => input,
      input: undefined,
      // The request's real signal (client disconnect on /rpc, cancel or disconnect on /mcp), as on /trpc.
      signal: ctx.req.signal,
      batchIndex: 0,
    });
    if (!opts.stream && isAsyncIterable(data)) return { ok: true, data: await drainStream(data, ctx) };
    return { ok: true, data };
  } catch (cause) {
    // A stream drained here can fail after the procedure returned, outside the middleware that
    // maps CoreErrors: map it the same way.
    return { ok: false, error: toTRPCError(cause) };
  }
}
