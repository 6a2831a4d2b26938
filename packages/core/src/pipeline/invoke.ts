import { TRPCError, type AnyRouter, type AnyProcedure } from '@trpc/server';
import type { Context } from './context.js';
import { toTRPCError } from './wireError.js';
import { drainStream, isAsyncIterable } from './drainStream.js';
import type { ProcedureMeta } from './meta.js';

export interface ProcedureInfo {
  path: string;
  type: 'query' | 'mutation' | 'subscription';
  meta: ProcedureMeta | undefined;
  procedure: AnyProcedure;
}

/** Flat map of procedure path → info, computed once per router. */
const indexCache = new WeakMap<AnyRouter, Map<string, ProcedureInfo>>();

export function procedureIndex(router: AnyRouter): Map<string, ProcedureInfo> {
  let index = indexCache.get(router);
  if (!index) {
    index = new Map();
    for (const [path, procedure] of Object.entries(router._def.procedures as Record<string, AnyProcedure>)) {
      index.set(path, { path, type: procedure._def.type, meta: procedure._def.meta as ProcedureMeta | undefined, procedure });
    }
    indexCache.set(router, index);
  }
  return index;
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
export async function invoke(router: AnyRouter, path: string, input: unknown, ctx: Context, opts: InvokeOptions = {}): Promise<InvokeResult> {
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
