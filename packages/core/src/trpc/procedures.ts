import type { ResolvedConfig } from '../config/schema.js';
import { CoreError } from '../errors/CoreError.js';
import { t } from './init.js';
import type { ProcedureMeta } from './meta.js';

/**
 * MCP access rules 2 and 3: does calling this tool need an authenticated caller?
 * Shared by the tRPC middleware (the authority) and the MCP transport (which must answer
 * HTTP 401 with a challenge so MCP clients start their OAuth flow).
 */
export function toolCallNeedsAuth(config: ResolvedConfig, meta: ProcedureMeta | undefined, toolName: string | undefined): boolean {
  const auth = config.mcp.auth;
  if (auth.authType === 'none' || !auth.requireAuthForToolsCall) return false;
  const isPublic = meta?.mcp?.public === true || (toolName !== undefined && auth.publicTools.includes(toolName));
  return !isPublic;
}

/**
 * Runs for every procedure on every entry point, as ONE middleware (each tRPC middleware
 * layer copies the call options, which showed in the transport benchmark):
 * - refuses any request whose presented credential failed verification (a bad token is never
 *   silently ignored, whatever the auth mode);
 * - applies the MCP tool-call rules (requireAuthForToolsCall, publicTools), so a custom
 *   router's procedures follow the same rules as the built-in ones;
 * - counts the call and its latency.
 */
const base = t.procedure.use(async ({ ctx, meta, path, next }) => {
  const started = performance.now();
  if (ctx.credentialError) {
    ctx.runtime.stats.record(ctx.req.transport, path, performance.now() - started, true);
    throw ctx.credentialError;
  }
  if (ctx.req.transport === 'mcp' && !ctx.identity && toolCallNeedsAuth(ctx.runtime.config, meta, ctx.mcp?.toolName)) {
    ctx.runtime.stats.record(ctx.req.transport, path, performance.now() - started, true);
    throw new CoreError('UNAUTHORIZED', 'authentication required for this tool');
  }
  const result = await next();
  ctx.runtime.stats.record(ctx.req.transport, path, performance.now() - started, !result.ok);
  return result;
});

/** Callable by anyone (subject to the MCP tool-call rules on /mcp). */
export const publicProcedure = base;

/** Needs an authenticated identity on every entry point. */
export const protectedProcedure = base.use(({ ctx, next }) => {
  if (!ctx.identity) throw new CoreError('UNAUTHORIZED', 'authentication required');
  return next({ ctx: { ...ctx, identity: ctx.identity } });
});

/** Needs an administrator identity on every entry point, whatever the auth mode. */
export const adminProcedure = protectedProcedure.use(({ ctx, next }) => {
  if (!ctx.identity.isAdmin) throw new CoreError('FORBIDDEN', 'administrator access required');
  return next();
});
