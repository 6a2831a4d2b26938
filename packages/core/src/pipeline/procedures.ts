import { type CoreError, coreErrorOf, type CoreErrorCode } from '../kernel/CoreError.js';
import { rateLimitCaller } from '../services/rateLimit/RateLimiter.js';
import { accessDecision, countsAsToolCall, decisionError } from './accessPolicy.js';
import type { SecurityEventType } from '../services/security/SecurityLog.js';
import { keyRefusalEvent } from '../services/security/keyRefusalEvent.js';
import type { Context } from './context.js';
import { t } from './init.js';
import { CallObservation } from './observeProcedure.js';
import { toTRPCError } from './wireError.js';
import type { Runtime } from '../runtime/Runtime.js';
import { servicesOf } from '../runtime/serverServices.js';
import { RUNTIME, type CallContext } from './callContext.js';

/** The runtime a call runs on (RequestScope.context or callContext put it there; pipeline/callContext.ts). */
const runtimeOf = (ctx: Context): Runtime => (ctx as CallContext)[RUNTIME];

/** Outcomes worth a security event, by error code. */
const SECURITY_EVENT: Partial<Record<CoreErrorCode, SecurityEventType>> = {
  INVALID_TOKEN: 'auth_failed',
  SESSION_NOT_FOUND: 'auth_failed',
  INSUFFICIENT_SCOPE: 'auth_failed',
  UNAUTHORIZED: 'auth_required',
  FORBIDDEN: 'forbidden',
  ACCESS_DENIED: 'access_denied',
  RATE_LIMITED: 'rate_limited',
};

/** The workspace and path a denied file call asked for (strings only, clipped by the log). */
async function deniedTarget(getRawInput: () => Promise<unknown>): Promise<Record<string, string> | undefined> {
  const raw = await getRawInput().catch(() => undefined);
  if (typeof raw !== 'object' || raw === null) return undefined;
  const { workspaceId, path } = raw as { workspaceId?: unknown; path?: unknown };
  const out: Record<string, string> = {};
  if (typeof workspaceId === 'string') out.workspaceId = workspaceId;
  if (typeof path === 'string') out.requestedPath = path;
  return Object.keys(out).length ? out : undefined;
}

/**
 * The event type of a refusal. An AI provider's own 429 also travels as RATE_LIMITED (the client
 * must back off either way) but names its provider; it is not one of our limits.
 */
function eventTypeOf(err: CoreError): SecurityEventType | undefined {
  if (err.appCode === 'RATE_LIMITED' && typeof err.details?.provider === 'string') return 'upstream_rate_limited';
  return SECURITY_EVENT[err.appCode];
}

async function logRefusal(ctx: Context, path: string, err: CoreError, getRawInput: () => Promise<unknown>): Promise<void> {
  const security = runtimeOf(ctx).security;
  // A refusal by the caller's API key: one shape on every entry point (the procedure path, not an
  // MCP tool name). The request refused whole was recorded where it was counted (authenticateRequest).
  const keyEvent = keyRefusalEvent(ctx.identity, err, { transport: ctx.req.transport, ip: ctx.req.ip, path });
  if (keyEvent) {
    if (err !== ctx.admission?.keyRefusal) security.record(keyEvent);
    return;
  }
  const type = eventTypeOf(err);
  if (!type || !security.wants(type)) return;
  const event = {
    type,
    reason: err.appCode,
    message: err.message,
    transport: ctx.req.transport,
    ip: ctx.req.ip,
    sub: ctx.identity?.sub,
    path: ctx.mcp?.toolName ?? path,
    detail:
      type === 'access_denied'
        ? await deniedTarget(getRawInput)
        : type === 'upstream_rate_limited'
          ? { provider: String(err.details?.provider) }
          : undefined,
  };
  // A bad credential fails every call of a batch: one event per request is enough.
  if (type === 'auth_failed') security.recordOnce(ctx.req, event);
  else security.record(event);
}

/** A call refused by its API key's model rules or budget, for `ai_backend_api_key_refusals_total`. */
function countKeyRefusal(runtime: Runtime, err: unknown): void {
  const reason = coreErrorOf(err)?.details?.reason;
  if (reason === 'key_model_not_allowed' || reason === 'key_provider_not_allowed') runtime.metrics?.apiKeyRefused('model');
  else if (reason === 'key_budget_exceeded' || reason === 'key_model_not_priced') runtime.metrics?.apiKeyRefused('budget');
}

/**
 * Runs for every procedure on every entry point, as ONE middleware (each tRPC middleware
 * layer copies the call options, which showed in the transport benchmark):
 * - refuses any request whose presented credential failed verification (a bad token is never
 *   silently ignored, whatever the auth mode);
 * - asks the one access policy (`accessDecision`: admin, user, writes, the MCP tool-call rules)
 *   whichever entry point the call came through, so a custom router's procedures follow the
 *   same rules as the built-in ones and /trpc, /rpc and /mcp agree;
 * - counts tool calls against `mcp.rateLimiting.maxToolCalls` that the entry sequence did not
 *   count before dispatch (it does when it parsed the calls itself, so it can answer 429 first);
 * - records refusals (auth, admin, workspace rules, rate limits, an API key's rules and limits) as security events;
 * - counts the call and its latency.
 */
/** Refuse before the procedure runs: count the failure, record the event, throw. */
async function refuse(
  ctx: Context,
  path: string,
  call: CallObservation,
  err: CoreError,
  getRawInput: () => Promise<unknown>,
): Promise<never> {
  const error = toTRPCError(err);
  call.done(error);
  await logRefusal(ctx, path, err, getRawInput);
  throw error;
}

const base = t.procedure.use(async ({ ctx, meta, path, next, getRawInput }) => {
  const call = new CallObservation(ctx, path);
  const runtime = runtimeOf(ctx);
  if (ctx.credentialError) return refuse(ctx, path, call, ctx.credentialError, getRawInput);
  // The entry sequence decided access for this call already (RequestScope): the decision is
  // reused, so each call is decided exactly once; a call without one (createCaller) is decided here.
  const decision = ctx.admission ? ctx.admission.decide(path, meta) : accessDecision(runtime.config, path, meta, ctx.identity);
  if (!decision.allowed) return refuse(ctx, path, call, decisionError(decision), getRawInput);
  // An API key's own requests-per-minute, on every entry point and shared by every instance. The
  // request was counted when its key was verified (authenticateRequest): that count is its first
  // call's; every further call (a batch) and a call without a request (createCaller) counts here.
  const grant = ctx.identity?.apiKey;
  if (grant?.requestsPerMinute) {
    const admission = ctx.admission;
    if (admission?.keyRefusal) return refuse(ctx, path, call, admission.keyRefusal, getRawInput);
    if (!admission?.takeKeyRequest()) {
      try {
        await runtime.keys.limits.request(grant);
      } catch (err) {
        return refuse(ctx, path, call, err as CoreError, getRawInput);
      }
    }
  }
  // Tool calls count on every entry point, once: in the entry sequence's limits step when the
  // entry parsed its calls before dispatch (RequestScope.limitToolCalls), here otherwise (/trpc,
  // whose calls tRPC parses). Server code's own calls (internal) do not count.
  if (runtime.rateLimit.enabled && ctx.req.transport !== 'internal' && countsAsToolCall(meta) && !ctx.admission?.counted(path)) {
    let decision: Awaited<ReturnType<typeof runtime.rateLimit.hit>>;
    try {
      decision = await runtime.rateLimit.hit('toolCalls', rateLimitCaller(ctx.identity, ctx.req.ip));
    } catch (err) {
      // Counters in the store every call needs: its outage refuses the call (RateLimiter.storeOutage).
      return refuse(ctx, path, call, err as CoreError, getRawInput);
    }
    if (decision && !decision.allowed) return refuse(ctx, path, call, runtime.rateLimit.refusal(decision), getRawInput);
  }
  const result = await call.run(next);
  // Ends an answered call's observation (a streamed one when its stream ends); a failure's below.
  if (result.ok) return result;
  // A CoreError thrown below reaches here inside tRPC's generic wrapper: it leaves with the
  // tRPC code its application code maps to (pipeline/errorTable.ts).
  const error = toTRPCError(result.error);
  call.done(error);
  if (grant) countKeyRefusal(runtime, error);
  const core = coreErrorOf(error);
  if (core && (SECURITY_EVENT[core.appCode] || grant)) await logRefusal(ctx, path, core, getRawInput);
  return { ...result, error };
});

/** Callable by anyone, subject to the access policy (writes, MCP tool-call rules) once auth is configured. */
export const publicProcedure = base;

/**
 * Needs an authenticated identity on every entry point. The base middleware's access policy
 * refuses anonymous callers (meta.access 'user'); this layer only narrows the context type.
 */
export const protectedProcedure = base
  .meta({ access: 'user' })
  // Only the narrowed member: tRPC merges it into a copy of the context (a spread of the whole context here made a second copy per call).
  .use(({ ctx, next }) => next({ ctx: { identity: ctx.identity! } }));

/**
 * Needs an administrator identity on every entry point, whatever the auth mode (meta.access
 * 'admin'). A key may call it only as an administrator key (rule 1: the admin scope, with an owner
 * who is an administrator at that call), so the key rule adds nothing here.
 */
export const adminProcedure = protectedProcedure.meta({ access: 'admin', keyAccess: 'any' });

/**
 * The middleware behind `provide` (pipeline/provide.ts, which gives it its typed signature): it adds the services one namespace
 * uses to its procedures' `ctx`, the way tRPC's docs give procedures what they need. It lives here, not beside `provide`, so a call
 * crosses no extra file (bench/callPathFiles.mjs); `pick` is typed `(runtime: never) => S` so that this file's declarations, which
 * are part of the public API (publicProcedure, withServices), never name the internal Runtime (publicSurface.test.ts). Its answer
 * is made once per runtime and reused, so a call pays for one lookup and tRPC's context merge, nothing else.
 */
export function servicesMiddleware<S extends object>(pick: (runtime: never) => S) {
  const made = new WeakMap<Runtime, S>();
  return t.middleware(({ ctx, next }) => {
    const runtime = runtimeOf(ctx);
    let services = made.get(runtime);
    if (!services) made.set(runtime, (services = pick(runtime as never)));
    return next({ ctx: services });
  });
}

/**
 * For custom routers: adds the server's public services (AiBackendServices) to `ctx`, the way
 * each built-in namespace's middleware adds its own: `ctx.storage`, `ctx.prompts`, `ctx.resources`.
 *
 * @example
 * const notes = router({
 * save: protectedProcedure.use(withServices).input(z.string()).mutation(({ ctx, input }) => ctx.storage.set(`notes:${ctx.identity.sub}`,
 * input)),
 * });
 */
export const withServices = servicesMiddleware(servicesOf);
