import type { CoreError } from '../kernel/CoreError.js';
import type { Identity, TransportName } from '../kernel/identity.js';
import type { AccessDecision } from './AccessDecision.js';
import type { ProcedureMeta } from './meta.js';
import type { WireRequest } from '../services/ai/passThrough/wireRequest.js';

/** Facts about the HTTP request, filled by the transport. */
export interface RequestInfo {
  transport: TransportName;
  /** Client address (the forwarded one only when trustProxy is set). */
  ip: string;
  /** Aborted when the client goes away or an MCP request is cancelled. */
  signal: AbortSignal;
  headers: Headers;
}

/**
 * What an MCP session offers a procedure running as a tool: progress, log messages and
 * server-to-client requests. Absent on /trpc and /rpc.
 */
export interface McpCallContext {
  sessionId?: string;
  toolName: string;
  /** Set when the call runs as a task of the MCP Tasks extension (`meta.longRunning`, 2026-07-28 clients). */
  taskId?: string;
  /** Report progress; reaches the client as notifications/progress when it asked for it. */
  progress(progress: number, total?: number, message?: string): Promise<void>;
  /**
   * Whether `progress` reaches anyone: the client sent a progressToken, or the call runs as a task
   * (progress becomes its status). A procedure that would ask someone else for progress (the MCP
   * gateway asking an upstream) asks only then: otherwise the upstream reports for nobody.
   */
  progressWanted: boolean;
  /** Send a log message (notifications/message) respecting the session's level. */
  log(level: 'debug' | 'info' | 'notice' | 'warning' | 'error', data: unknown): Promise<void>;
  /** Client capabilities declared at initialize. */
  clientCapabilities?: Record<string, unknown>;
  /**
   * A server-to-client request (sampling/createMessage, elicitation/create, roots/list).
   * Refused with NOT_CONFIGURED when the client did not declare the matching capability or the
   * session cannot carry server-to-client requests (stateless mode).
   */
  request<T = unknown>(method: string, params: Record<string, unknown>, opts?: { timeoutMs?: number }): Promise<T>;
  /**
   * Close this call's SSE stream now; the client reconnects with Last-Event-ID and receives
   * the rest (SEP-1699 polling for long calls). Absent when resumability is unavailable.
   */
  closeStream?: () => void;
  /**
   * Answers to the input this call asked for (MCP multi round-trip requests): keyed as in the
   * `inputRequests` of the input-required result the procedure returned before. A 2026-07-28
   * client sends them with its retry; for a 2025 session the SDK asks the client itself and
   * calls the procedure again. Client input: validate it like any other.
   */
  inputResponses?: Record<string, unknown>;
  /** The `requestState` the procedure sealed into its last input-required result, verified (integrity and caller). */
  requestState?: unknown;
  /** Seal a payload as `requestState` for an input-required result (HMAC, bound to the caller, expires). */
  sealState?(payload: unknown): Promise<string>;
}

/**
 * What the request's entry sequence did for its calls already (RequestScope): the one access
 * decision per call, and the tool calls it counted against the limits before dispatch. The base
 * middleware reuses both instead of doing them again.
 */
export interface CallAdmission {
  decide(path: string, meta: ProcedureMeta | undefined): AccessDecision;
  /** The entry counted the tool calls of this procedure in this request already. */
  counted(path: string): boolean;
  /** The request's API key is over its requests per minute (RequestScope.keyRefusal): every call fails with this. */
  readonly keyRefusal: CoreError | null;
  /**
   * True once per request when it was counted against its API key's requests per minute: that
   * count is this call's, so a request making one call counts once and a batch counts each call.
   */
  takeKeyRequest(): boolean;
}

/**
 * What every procedure gets in `ctx`: who calls, the request, and on MCP the session. The server's
 * services are not in it: each namespace's middleware adds the ones it uses (ctx.ai, ctx.billing,
 * ...), and a custom router's procedures take the public ones with `withServices`.
 */
export interface Context {
  identity: Identity | null;
  /** A credential was presented but failed verification: every procedure refuses with this. */
  credentialError: CoreError | null;
  req: RequestInfo;
  mcp?: McpCallContext;
  /** Set by the request scope of an entry point; absent for server code's own calls. */
  admission?: CallAdmission;
  /** The vendor wire request a /v1 call was translated from (its pass-through path); absent elsewhere. */
  wire?: WireRequest;
}
