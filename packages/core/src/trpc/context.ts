import type { Runtime } from '../runtime/Runtime.js';
import type { CoreError } from '../errors/CoreError.js';

/** Who is calling, as established by the auth layer (JWT or OAuth access token). */
export interface Identity {
  /**
   * The stored id of the caller: a JWT subject as is, an identity-provider subject qualified by
   * its issuer (`idp:<issuer>#<sub>`); see trpc/subjectId.ts. Every per-user key uses it.
   */
  sub: string;
  email?: string;
  /** The issuer vouched for `email` (`email_verified` true or "true"). Only then may it name an administrator or claim the e-mail index. */
  emailVerified?: boolean;
  scopes: string[];
  /** Administrator: listed in admin.users or holding the admin scope. */
  isAdmin: boolean;
  /** How the identity was established. */
  via: 'jwt' | 'oauth' | 'apiKey';
  /** OAuth client id when the token came from our authorization server. */
  clientId?: string;
  /** The API key the caller presented (via 'apiKey'): its owner is `sub`, these are its narrower rules. */
  apiKey?: ApiKeyGrant;
}

/** The rules of the API key a call was made with (docs/api-keys.md); enforced by the ai and billing services. */
export interface ApiKeyGrant {
  id: string;
  /** Providers the key may call; undefined: any. */
  providers?: readonly string[];
  /** micromatch globs over `model` or `provider/model`; undefined: any. */
  models?: readonly string[];
  requestsPerMinute?: number;
  tokensPerMinute?: number;
  concurrent?: number;
}

export type TransportName = 'trpc' | 'rpc' | 'mcp' | 'openai' | 'internal';

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

export interface Context {
  runtime: Runtime;
  identity: Identity | null;
  /** A credential was presented but failed verification: every procedure refuses with this. */
  credentialError: CoreError | null;
  req: RequestInfo;
  mcp?: McpCallContext;
}

export interface CreateContextOptions {
  runtime: Runtime;
  req: RequestInfo;
  /** Raw bearer token from the Authorization header, if any. */
  bearer?: string | null;
  mcp?: McpCallContext;
}

/**
 * Build the tRPC context for one request. The token is verified here, once per request,
 * never per procedure in a batch.
 */
export async function createContext(opts: CreateContextOptions): Promise<Context> {
  let identity: Identity | null = null;
  let credentialError: CoreError | null = null;
  if (opts.bearer) {
    const result = await opts.runtime.authenticate(opts.bearer);
    if (result.ok) identity = result.identity;
    else credentialError = result.error;
  }
  return { runtime: opts.runtime, identity, credentialError, req: opts.req, mcp: opts.mcp };
}
