import type { AnyRouter } from '@trpc/server';
import { CoreError } from '../kernel/CoreError.js';
import { verifies } from '../config/resolveAuth.js';
import { publicBaseUrl, resourceMetadataUrl } from '../runtime/publicBaseUrl.js';
import type { Runtime } from '../runtime/Runtime.js';
import type { CallAdmission, McpCallContext, RequestInfo } from './context.js';
import { RUNTIME, type CallContext } from './callContext.js';
import type { WireRequest } from '../services/ai/passThrough/wireRequest.js';
import type { Identity, TransportName } from '../kernel/identity.js';
import { procedureIndex } from './invoke.js';
import type { ProcedureMeta } from './meta.js';
import { rateLimitCaller, type RateLimitDecision } from '../services/rateLimit/RateLimiter.js';
import { bearerChallenge } from './bearerChallenge.js';
import { watchCredential } from './watchCredential.js';
import { authenticateRequest } from './authenticateRequest.js';
import { accessDecision, authConfigured, callScopeOf, countsAsToolCall, type AccessDecision, type CallKind } from './accessPolicy.js';

/**
 * A call's `ctx.req`. Its signal is made on the first read only: most procedures never look at
 * it, and a signal given as a function (an MCP call's, which links its cancellation to the HTTP
 * request's) is called then and kept. A class, so the lazy getter is its prototype's: an object
 * literal with a getter cost more to build per call than the rest of the context.
 */
class CallRequest implements RequestInfo {
  readonly transport: TransportName;
  readonly ip: string;
  readonly headers: Headers;
  #facts: RequestFacts;
  #signal: AbortSignal | (() => AbortSignal) | undefined;

  constructor(facts: RequestFacts, signal: AbortSignal | (() => AbortSignal) | undefined) {
    this.transport = facts.transport;
    this.ip = facts.ip;
    this.headers = facts.headers;
    this.#facts = facts;
    this.#signal = signal;
  }

  get signal(): AbortSignal {
    if (typeof this.#signal === 'function') this.#signal = this.#signal();
    return this.#signal ?? this.#facts.signal();
  }
}

/** What a transport knows about an HTTP request before it runs anything. */
export interface RequestFacts {
  transport: TransportName;
  method: string;
  url: string;
  headers: Headers;
  /** The Authorization bearer token; '\0' for a malformed header (a presented, invalid credential). */
  bearer: string | null;
  /** A token was sent in the query string (RFC 6750 §2.3), which we refuse. */
  tokenInQuery: boolean;
  /** Client address (the forwarded one only when trustProxy is set). */
  ip: string;
  /** The request's AbortSignal, read lazily: aborted when the client goes away. */
  signal: () => AbortSignal;
}

/** One call a transport parsed from the request: which procedure, reached how. */
export interface ParsedCall {
  kind: CallKind;
  /** Procedure path; undefined for an MCP prompt or resource that no procedure serves. */
  path: string | undefined;
}

/** The HTTP answer that makes a client sign in (RFC 6750 §3, RFC 9728 resource_metadata). */
export interface Challenge {
  status: 401 | 403;
  headers: Record<string, string>;
  error: CoreError;
}

/**
 * The request-level seam (the way tRPC's `resolveResponse` sits under its adapters): a
 * transport opens one scope per HTTP request; the scope verifies the credential once, decides
 * access for each parsed call through the one policy, builds the challenge to send, and gives
 * the context every call runs with. Transports keep only parsing and formatting.
 */
export class RequestScope {
  // Made on first use: most requests make one call, and this object is built on every request.
  /** The one access decision of each procedure this request calls (by path: the identity is the request's). */
  private decisions: Map<string, AccessDecision> | undefined;
  /** Procedures whose tool calls the limits step counted (limitToolCalls). */
  private countedTools: Set<string> | undefined;
  private admission: CallAdmission | undefined;
  /** The rate-limit decisions of the limits step, for the RateLimit headers of an allowed answer. */
  readonly limitDecisions: RateLimitDecision[] = [];

  private constructor(
    readonly runtime: Runtime,
    readonly facts: RequestFacts,
    readonly identity: Identity | null,
    /** A credential was presented and refused: every call of the request fails with it. */
    readonly credentialError: CoreError | null,
    /**
     * The request's API key is over its requests per minute (authenticateRequest): the request is
     * refused with this (429) before any call; an entry point that answers per call fails each call with it.
     */
    readonly keyRefusal: CoreError | null,
    /** The request was counted against its API key's requests per minute: that count covers its first procedure call. */
    private keyCountUnused: boolean,
  ) {}

  static async open(runtime: Runtime, facts: RequestFacts): Promise<RequestScope> {
    let identity: Identity | null = null;
    let credentialError: CoreError | null = null;
    let keyRefusal: CoreError | null = null;
    if (facts.tokenInQuery) credentialError = new CoreError('INVALID_TOKEN', 'tokens in the query string are not accepted');
    else if (facts.bearer) {
      const result = await authenticateRequest(runtime, facts.bearer, { ip: facts.ip, request: facts }, facts.transport);
      if (result.ok) {
        identity = result.identity;
        keyRefusal = result.refused;
      } else credentialError = result.error;
    }
    const counted = identity?.apiKey?.requestsPerMinute !== undefined && keyRefusal === null;
    return new RequestScope(runtime, facts, identity, credentialError, keyRefusal, counted);
  }

  /**
   * Watch this request's credential while its long-lived answer stays open (watchCredential.ts):
   * `onLost` runs once when it is revoked, expires or no longer makes an administrator of one it
   * made one. Nothing to watch for an anonymous request. Returns the function that stops watching.
   */
  watchCredential(onLost: () => void): () => void {
    if (!this.identity || !this.facts.bearer) return () => undefined;
    const everyMs = this.runtime.config.limits.streamCredentialCheckSec * 1000;
    return watchCredential(this.runtime, this.facts, this.identity, everyMs, onLost);
  }

  /** The tRPC context for the calls of this request (one per MCP call, for its `ctx.mcp` and signal). */
  context(opts: { mcp?: McpCallContext; signal?: AbortSignal | (() => AbortSignal); wire?: WireRequest } = {}): CallContext {
    return {
      [RUNTIME]: this.runtime,
      identity: this.identity,
      credentialError: this.credentialError,
      req: new CallRequest(this.facts, opts.signal),
      ...(opts.mcp ? { mcp: opts.mcp } : {}),
      ...(opts.wire ? { wire: opts.wire } : {}),
      admission: (this.admission ??= {
        decide: (path, meta) => this.decideFor(path, meta),
        counted: (path) => this.countedTools?.has(path) === true,
        keyRefusal: this.keyRefusal,
        takeKeyRequest: () => {
          const unused = this.keyCountUnused;
          this.keyCountUnused = false;
          return unused;
        },
      }),
    };
  }

  /** The access decision for one parsed call (the one policy; same answer on every entry point). */
  decide(call: ParsedCall): AccessDecision {
    if (call.path === undefined) return { allowed: true };
    const known = this.decisions?.get(call.path);
    if (known) return known;
    return this.decideFor(call.path, procedureIndex(this.runtime.router as AnyRouter).get(call.path)?.meta);
  }

  /** The decision for a procedure whose meta the caller holds (the base middleware): made once per request. */
  private decideFor(path: string, meta: ProcedureMeta | undefined): AccessDecision {
    let decision = this.decisions?.get(path);
    if (!decision) {
      decision = accessDecision(this.runtime.config, path, meta, this.identity);
      (this.decisions ??= new Map()).set(path, decision);
    }
    return decision;
  }

  /**
   * The limits step of the entry sequence: count the request's tool calls against
   * `mcp.rateLimiting.maxToolCalls` (per caller) before any is dispatched, so an entry point can
   * answer 429 first; the base middleware then does not count them again. The rate-limit
   * decision (null: limiting off or nothing counted) and the refusal when over the limit.
   */
  async limitToolCalls(calls: readonly ParsedCall[]): Promise<{ decision: RateLimitDecision | null; refused: CoreError | null }> {
    const limiter = this.runtime.rateLimit;
    if (!limiter.enabled) return { decision: null, refused: null };
    const index = procedureIndex(this.runtime.router as AnyRouter);
    const tools = calls.filter((call) => call.path !== undefined && countsAsToolCall(index.get(call.path)?.meta));
    if (tools.length === 0) return { decision: null, refused: null };
    const counted = (this.countedTools ??= new Set());
    for (const call of tools) counted.add(call.path!);
    const decision = await limiter.hit('toolCalls', rateLimitCaller(this.identity, this.facts.ip), tools.length);
    if (decision) this.limitDecisions.push(decision);
    return { decision, refused: decision && !decision.allowed ? limiter.refusal(decision) : null };
  }

  /**
   * The challenge an HTTP-level refusal sends: for a refused credential (401 invalid_token, 403
   * insufficient_scope), or for an anonymous caller that must sign in (401 without an error)
   * when authentication is configured.
   * Null when the request may proceed to its calls.
   */
  challenge(calls: ParsedCall[] = []): Challenge | null {
    // A credential that could not be checked is not a bad one: a 401 would make clients drop a
    // valid key or sign the user out (LiteLLM #38121). Its calls are refused with the error itself.
    if (this.credentialUnchecked()) return null;
    if (this.credentialError) return this.challengeFor(this.credentialError);
    if (this.identity) {
      // A token short of a scope gets the 403 that makes clients step up (MCP scope challenge),
      // naming every scope the request's calls need at once.
      const needed = new Set<string>();
      for (const call of calls) {
        const d = this.decide(call);
        if (!d.allowed && d.code === 'INSUFFICIENT_SCOPE') for (const s of d.requiredScopes ?? []) needed.add(s);
      }
      if (needed.size === 0) return null;
      const requiredScopes = [...needed];
      return this.challengeFor(
        new CoreError(
          'INSUFFICIENT_SCOPE',
          `this request needs the scope${requiredScopes.length > 1 ? 's' : ''} ${requiredScopes.join(' ')}`,
          { details: { requiredScopes } },
        ),
      );
    }
    // With authType 'none' there is no sign-in to start: refusals stay per-call errors.
    if (!authConfigured(this.runtime.config)) return null;
    for (const call of calls) {
      const d = this.decide(call);
      if (!d.allowed && d.code === 'UNAUTHORIZED') return this.challengeFor(null, d.message);
    }
    return null;
  }

  /**
   * The error when the presented credential could be neither accepted nor refused (the store
   * that holds API keys or OAuth sessions is down): answered as that error (503), never as a
   * challenge. Null otherwise.
   */
  credentialUnchecked(): CoreError | null {
    return this.credentialError?.appCode === 'UNAVAILABLE' ? this.credentialError : null;
  }

  /** Build the WWW-Authenticate challenge naming our protected-resource metadata. */
  challengeFor(error: CoreError | null, message = 'authentication required'): Challenge {
    const status = error?.appCode === 'INSUFFICIENT_SCOPE' ? 403 : 401;
    const base = publicBaseUrl(this.facts.url, this.facts.headers, this.runtime.config);
    // RFC 6750 §3 / MCP scope selection: the scopes to ask for. A 403 names what the calls need;
    // a 401 what a client should request to use the server (`signInScopes`).
    const scopes = error?.appCode === 'INSUFFICIENT_SCOPE' ? error.details?.requiredScopes : signInScopes(this.runtime.config);
    const header = bearerChallenge({
      resourceMetadata: resourceMetadataUrl(base),
      ...(error ? { error: status === 403 ? 'insufficient_scope' : 'invalid_token', errorDescription: error.message } : {}),
      ...(Array.isArray(scopes) && scopes.length > 0 ? { scope: scopes.join(' ') } : {}),
    });
    const headers = { 'WWW-Authenticate': header };
    return { status, headers, error: error ?? new CoreError('UNAUTHORIZED', message, { headers }) };
  }
}

/**
 * The scopes a 401 challenge asks for, from the tokens the server actually verifies (not the
 * configured auth type: 'both' without a running OAuth server verifies JWTs only): where our
 * OAuth tokens are verified, the scopes our authorization server grants by default
 * (`oauth.scopesSupported`) plus the call scope, never `offline_access` (MCP: refresh tokens are
 * not a resource requirement); where only JWTs are, `mcp.auth.jwt.requiredScopes`; none otherwise.
 */
export function signInScopes(config: Runtime['config']): string[] {
  const { verifiers } = config.auth;
  if (verifies(verifiers, 'oauth')) {
    const call = callScopeOf(config);
    return [...new Set([...config.oauth.scopesSupported, ...(call ? [call] : [])])].filter((s) => s !== 'offline_access');
  }
  if (verifies(verifiers, 'jwt')) return [...config.mcp.auth.jwt.requiredScopes];
  return [];
}
