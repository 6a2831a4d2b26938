import { CoreError } from '../kernel/CoreError.js';
import type { Runtime } from '../runtime/Runtime.js';
import type { Context } from './context.js';

/**
 * Where a call's context keeps the server's runtime. A symbol, not a field of the public Context
 * type: procedures receive their services from their namespace's middleware (`provide`: ctx.ai,
 * ctx.billing, ...; custom routers `withServices`), and only the pipeline (the base middleware,
 * `provide`, the call observation, the prompt and resource adapters) reads it. tRPC merges
 * contexts by spreading them, which keeps symbol keys. The files every call crosses (RequestScope,
 * the base middleware, the observation) use the key directly, so this file adds none to a call's
 * path (bench/callPathFiles.mjs); everything else goes through callContext and runtimeOf.
 */
// Symbol.for: one key for every copy of core a process loads (a custom router built against the
// published entry while the server runs another copy, as the examples' CLI loader does in tests).
export const RUNTIME: unique symbol = Symbol.for('ai-backend.runtime') as never;

/** The context a call runs with on the server: the public Context plus the runtime the pipeline reads. */
export type CallContext = Context & { readonly [RUNTIME]: Runtime };

/** A call context on `runtime` (RequestScope.context, and server code or tests calling procedures themselves). */
export function callContext(runtime: Runtime, ctx: Context): CallContext {
  return { ...ctx, [RUNTIME]: runtime };
}

/** The runtime a call runs on; a context made without callContext has none (a programming error). */
export function runtimeOf(ctx: Context): Runtime {
  const runtime = (ctx as Partial<CallContext>)[RUNTIME];
  if (!runtime) throw new CoreError('INTERNAL', 'this call context was not made by the server (callContext)');
  return runtime;
}
