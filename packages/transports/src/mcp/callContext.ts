import type { AuthInfo, Server, ServerContext } from '@modelcontextprotocol/server';
import { CoreError, type RequestScope, type Context, type McpCallContext } from '@ai-backend/core/internal';
import { levelEnabled, type McpServerDeps, type McpSessionState } from './sessionState.js';
import type { StateUse } from './requestStateSeal.js';

/** What the HTTP layer learned about a request, carried to handlers in `authInfo.extra`: core's request scope. */
export interface McpRequestFacts {
  scope: RequestScope;
}

function scopeOf(authInfo: AuthInfo | undefined): RequestScope {
  const facts = authInfo?.extra?.facts as McpRequestFacts | undefined;
  if (!facts) throw new CoreError('INTERNAL', 'MCP request without request facts');
  return facts.scope;
}

/**
 * Watch the credential of the request `ctx` belongs to while something it started runs on after
 * the answer (a task's run): `onLost` runs once when that credential is refused or no longer makes
 * an administrator of one it made one (RequestScope.watchCredential). Returns the function that stops watching.
 */
export function watchCallerCredential(ctx: ServerContext, onLost: () => void): () => void {
  return scopeOf(ctx.http?.authInfo).watchCredential(onLost);
}

/** Aborts its controller with the reason of whichever source aborts first (no closure per call). */
class AbortLink {
  constructor(private readonly controller: AbortController) {}
  handleEvent(event: Event): void {
    this.controller.abort((event.target as AbortSignal).reason);
  }
}
const ONCE = { once: true } as const;

/**
 * The signal a procedure run from MCP sees on a stream that cannot be resumed: aborted by
 * notifications/cancelled or the session closing (the SDK's `mcpReq.signal`), and by the HTTP
 * request that carried the call going away before its answer was written (client disconnect). A stream the server itself ends for
 * SEP-1699 polling finishes its response normally, so it does not cancel the call.
 * One controller and one listener object for both sources: `AbortSignal.any` costs about twice
 * as much per call (weak references to its sources and a finalization registry). Both sources
 * live no longer than the call, so nothing needs removing.
 */
function callSignal(scope: RequestScope, ctx: ServerContext): AbortSignal {
  const call = ctx.mcpReq.signal;
  const http = scope.facts.signal();
  if (call.aborted) return call;
  if (http.aborted) return http;
  const controller = new AbortController();
  const link = new AbortLink(controller);
  call.addEventListener('abort', link, ONCE);
  http.addEventListener('abort', link, ONCE);
  return controller.signal;
}

/** Which client capability each server-to-client request needs. */
const REQUIRED_CAPABILITY: Record<string, string> = {
  'sampling/createMessage': 'sampling',
  'elicitation/create': 'elicitation',
  'roots/list': 'roots',
};
/**
 * An elicitation's mode must be one the client declared (2025-11-25: `elicitation: { form?, url? }`;
 * an empty `elicitation: {}`, as older clients declare it, is form only).
 */
function assertElicitationMode(declared: unknown, params: unknown): void {
  const mode = (params as { mode?: unknown } | undefined)?.mode === 'url' ? 'url' : 'form';
  const modes = typeof declared === 'object' && declared !== null ? Object.keys(declared) : [];
  const supported = modes.length === 0 ? mode === 'form' : modes.includes(mode);
  if (!supported) {
    throw new CoreError(
      'NOT_CONFIGURED',
      `the MCP client did not declare ${mode}-mode elicitation, so elicitation/create in ${mode} mode is not available`,
    );
  }
}

/** A person answers elicitations and reviews sampling requests: give them time. */
const DEFAULT_TIMEOUT_MS: Record<string, number> = { 'elicitation/create': 10 * 60_000, 'sampling/createMessage': 5 * 60_000 };

/**
 * The client capabilities this request runs under: the session's initialize (2025), or the
 * request's own `_meta` envelope (2026; the SDK backfills it per request under createMcpHandler).
 */
export function clientCapabilitiesOf(server: Server): Record<string, unknown> | undefined {
  return server.getClientCapabilities() as Record<string, unknown> | undefined;
}

/** What is being run (the use a sealed state is bound to), and the state the request carried, already claimed for it. */
export interface McpCall {
  use: StateUse;
  requestState: unknown;
}

/**
 * The tRPC context for a procedure run from an MCP request (tool call, prompt, resource):
 * the caller's identity from the HTTP layer, the request's AbortSignal (aborted by
 * notifications/cancelled), and `ctx.mcp` with progress, logging and server-to-client requests.
 */
export function mcpContext(
  deps: McpServerDeps,
  state: McpSessionState,
  server: Server,
  ctx: ServerContext,
  call: McpCall,
  progressToken?: string | number,
): Context {
  const scope = scopeOf(ctx.http?.authInfo);
  const { requestState, use } = call;
  const name = use.name;
  let lastProgress = Number.NEGATIVE_INFINITY;
  const mcp: McpCallContext = {
    ...(ctx.mcpReq.inputResponses ? { inputResponses: ctx.mcpReq.inputResponses } : {}),
    ...(requestState !== undefined ? { requestState } : {}),
    sealState: (payload) => deps.seal.mint(payload, ctx, use),
    sessionId: deps.sessionId(),
    toolName: name,
    clientCapabilities: clientCapabilitiesOf(server),
    progressWanted: progressToken !== undefined,
    async progress(progress, total, message) {
      // MCP: "The progress value MUST increase with each notification": one that does not
      // (a repeated count, a step back) is not sent, whichever procedure or upstream reported it.
      if (progressToken === undefined || !(progress > lastProgress)) return;
      lastProgress = progress;
      await ctx.mcpReq.notify({
        method: 'notifications/progress',
        params: { progressToken, progress, ...(total !== undefined ? { total } : {}), ...(message ? { message } : {}) },
      });
    },
    async log(level, data) {
      // 2026 requests carry their log level in `_meta`; the SDK applies it.
      if (deps.mode === 'modern') return ctx.mcpReq.log(level, data, name);
      if (!levelEnabled(state, level)) return;
      // Related to the request, so it travels on the call's own SSE stream.
      await ctx.mcpReq.notify({ method: 'notifications/message', params: { level, logger: name, data } });
    },
    async request(method, params, opts) {
      if (deps.mode !== 'stateful') {
        throw new CoreError(
          'NOT_CONFIGURED',
          deps.mode === 'modern'
            ? `${method} is a server-to-client request, which MCP 2026-07-28 replaced by input-required results; this procedure cannot ask it of a 2026-07-28 client`
            : `${method} needs a stateful MCP session (mcp.sessionMode 'stateful'); this server runs stateless`,
        );
      }
      const capability = REQUIRED_CAPABILITY[method];
      const caps = clientCapabilitiesOf(server);
      if (capability && !caps?.[capability]) {
        throw new CoreError('NOT_CONFIGURED', `the MCP client did not declare the ${capability} capability, so ${method} is not available`);
      }
      if (method === 'elicitation/create') assertElicitationMode(caps?.elicitation, params);
      const timeout = opts?.timeoutMs ?? DEFAULT_TIMEOUT_MS[method];
      return (await ctx.mcpReq.send({ method, params } as never, {
        ...(timeout ? { timeout } : {}),
        signal: ctx.mcpReq.signal,
      })) as never;
    },
    ...(ctx.http?.closeSSE ? { closeStream: ctx.http.closeSSE } : {}),
  };
  // A 2026-07-28 request's transport serves this one exchange and closes when its HTTP request
  // goes away, which aborts the SDK's signal: nothing to link. A 2025 session's transport
  // outlives the request carrying the call. When the call's stream is resumable (an event store,
  // a 2025-11-25 client: the SDK offers `closeSSE` exactly then), its answer is kept for a
  // `Last-Event-ID` reconnect, so a dropped connection is not a cancel (2025-11-25 transports:
  // "Disconnection SHOULD NOT be interpreted as the client cancelling its request");
  // notifications/cancelled and the session ending still abort it. Otherwise (JSON answers, no
  // event store, older clients) nobody could receive the answer, and the drop cancels the call.
  const resumable = deps.mode !== 'modern' && ctx.http?.closeSSE !== undefined;
  return scope.context({ mcp, signal: deps.mode === 'modern' || resumable ? ctx.mcpReq.signal : () => callSignal(scope, ctx) });
}

/**
 * The tRPC context for a run of a task (MCP Tasks extension): the caller of the request that
 * started or resumed it, but the task's own AbortSignal (tasks/cancel, on any instance), since
 * the run outlives that request. Progress and logs have no stream to travel on (the client polls
 * tasks/get); a progress message becomes the task's statusMessage. Input is asked for with an
 * input-required result, which parks the task in `input_required`.
 */
export function taskCallContext(
  deps: McpServerDeps,
  server: Server,
  ctx: ServerContext,
  use: StateUse,
  signal: AbortSignal,
  round: { taskId: string; inputResponses?: Record<string, unknown>; requestState?: unknown },
  onStatus: (message: string) => void,
): Context {
  const scope = scopeOf(ctx.http?.authInfo);
  const name = use.name;
  const mcp: McpCallContext = {
    ...(round.inputResponses && Object.keys(round.inputResponses).length > 0 ? { inputResponses: round.inputResponses } : {}),
    ...(round.requestState !== undefined ? { requestState: round.requestState } : {}),
    sealState: (payload) => deps.seal.mint(payload, ctx, use),
    toolName: name,
    taskId: round.taskId,
    clientCapabilities: clientCapabilitiesOf(server),
    progressWanted: true,
    async progress(progress, total, message) {
      onStatus(message ?? (total !== undefined ? `${progress}/${total}` : String(progress)));
    },
    async log(level, data) {
      deps.services.logger.debug('MCP task log', {
        task: round.taskId,
        tool: name,
        level,
        data: typeof data === 'string' ? data.slice(0, 500) : undefined,
      });
    },
    async request(method) {
      throw new CoreError(
        'NOT_CONFIGURED',
        `${method} is a server-to-client request; inside an MCP task ask for input with an input-required result instead`,
      );
    },
  };
  return scope.context({ mcp, signal });
}
