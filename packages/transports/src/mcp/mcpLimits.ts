import {
  JSONRPC_CODE_BY_TRPC,
  rateLimitCaller,
  type CoreError,
  type Identity,
  type RateLimitDecision,
  type RequestScope,
  type Runtime,
  type SecurityLog,
} from '@ai-backend/core/internal';

/** What the limits of an /mcp request use: the rate limiter and the security log. */
export type McpLimitServices = Pick<Runtime, 'rateLimit' | 'security'>;

/**
 * Rate limits of one /mcp request (`mcp.rateLimiting`): the request itself counts toward
 * `maxRequests` per caller (subject, else client address) in core Storage; its tool calls are
 * counted by the entry sequence's limits step (RequestScope.limitToolCalls), as on /v1. Over a
 * limit the answer is HTTP 429 with Retry-After and the IETF RateLimit headers, before anything
 * is dispatched; allowed answers carry the same RateLimit headers.
 */
export class McpLimits {
  private readonly decisions: Array<RateLimitDecision | null> = [];
  private caller = '';
  /** The request's scope, whose limits step counts the tool calls (RequestScope.limitToolCalls). */
  private scope: RequestScope | undefined;
  private address: string | undefined;

  constructor(
    private readonly services: McpLimitServices,
    /** The client address, read only when limiting is on. */
    private readonly clientIp: () => string,
  ) {}

  private get ip(): string {
    return (this.address ??= this.clientIp());
  }

  /** Count this request; a 429 Response when the caller is over `maxRequests`. */
  async request(scope: RequestScope): Promise<Response | null> {
    this.scope = scope;
    if (!this.services.rateLimit.enabled) return null;
    const identity = scope.identity;
    this.caller = rateLimitCaller(identity, this.ip);
    const decision = await this.services.rateLimit.hit('requests', this.caller);
    this.decisions.push(decision);
    if (!decision || decision.allowed) return null;
    return this.refused(this.services.rateLimit.refusal(decision, this.decisions), identity, 'request', 'requests', decision.limit);
  }

  /**
   * The 429 of the entry sequence: tool calls its limits step refused (RequestScope.limitToolCalls),
   * or, before that step, the request itself refused as over its API key's requests per minute.
   */
  refusedToolCalls(err: CoreError, scope: RequestScope): Response {
    const decisions = [...this.decisions, ...scope.limitDecisions];
    const last = scope.limitDecisions.at(-1);
    // The request over its API key's requests per minute: recorded where it was counted (authenticateRequest).
    if (!last) return this.answer(err);
    return this.refused(this.services.rateLimit.refusal(last, decisions), scope.identity, 'tools/call', 'toolCalls', last.limit);
  }

  /** Put the RateLimit headers on an allowed answer. */
  stamp(res: Response): Response {
    const decisions = this.scope?.limitDecisions.length ? [...this.decisions, ...this.scope.limitDecisions] : this.decisions;
    if (decisions.length === 0) return res;
    const headers = this.services.rateLimit.headers(decisions);
    const entries = Object.entries(headers);
    if (entries.length === 0) return res;
    try {
      for (const [k, v] of entries) res.headers.set(k, v);
      return res;
    } catch {
      // Immutable headers (a fetched Response): copy it.
      const copy = new Response(res.body, res);
      for (const [k, v] of entries) copy.headers.set(k, v);
      return copy;
    }
  }

  private refused(
    err: CoreError,
    identity: Identity | null,
    path: string,
    kind: 'requests' | 'toolCalls',
    limit: number | undefined,
  ): Response {
    this.services.security.record({
      type: 'rate_limited',
      reason: 'RATE_LIMITED',
      message: err.message,
      transport: 'mcp',
      ip: this.ip,
      sub: identity?.sub,
      path,
      detail: limit === undefined ? { kind } : { kind, limit },
    });
    return this.answer(err);
  }

  /** The JSON-RPC 429 of a refusal. */
  private answer(err: CoreError): Response {
    const body = {
      jsonrpc: '2.0',
      id: null,
      error: { code: JSONRPC_CODE_BY_TRPC.TOO_MANY_REQUESTS, message: err.message, data: err.details },
    };
    return new Response(JSON.stringify(body), { status: 429, headers: { 'content-type': 'application/json', ...err.headers } });
  }
}

/** Security event for a 401/403 the MCP transport answers itself (nothing reaches the procedures). */
export function recordChallenge(security: SecurityLog, ip: string, status: 401 | 403, error: CoreError | null): void {
  security.record({
    type: error ? 'auth_failed' : 'auth_required',
    reason: error?.appCode ?? 'UNAUTHORIZED',
    message: error?.message ?? 'authentication required',
    transport: 'mcp',
    ip,
    detail: { status },
  });
}
