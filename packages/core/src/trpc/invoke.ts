import { getTRPCErrorFromUnknown, TRPCError, type AnyRouter, type AnyProcedure } from '@trpc/server';
import type { Context } from './context.js';
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

/**
 * The one invoke seam shared by /rpc and /mcp (and usable from code): run a procedure by path
 * through its full middleware chain (auth, rate limits, validation). /trpc reaches the same
 * procedures through tRPC's own fetch handler. Value-returning: never throws.
 */
export async function invoke(router: AnyRouter, path: string, input: unknown, ctx: Context): Promise<InvokeResult> {
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
    return { ok: true, data };
  } catch (cause) {
    return { ok: false, error: getTRPCErrorFromUnknown(cause) };
  }
}
