import { JSONRPC_CODE_BY_TRPC, rateLimitCaller, type CoreError, type Identity, type RateLimitDecision, type Runtime } from '@ai-backend/core/internal';

/**
 * Rate limits of one /mcp request (`mcp.rateLimiting`): the request itself counts toward
 * `maxRequests`, each tools/call message toward `maxToolCalls`, both per caller (subject, else
 * client address) in core Storage. Over a limit the answer is HTTP 429 with Retry-After and the
 * IETF RateLimit headers, before anything is dispatched; allowed answers carry the same
 * RateLimit headers. Tool calls over /trpc and /rpc are counted by core's base middleware.
 */
export class McpLimits {
  private readonly decisions: Array<RateLimitDecision | null> = [];
  private caller = '';
  private address: string | undefined;

  constructor(
    private readonly runtime: Runtime,
    /** The client address, read only when limiting is on. */
    private readonly clientIp: () => string,
  ) {}

  private get ip(): string {
    return (this.address ??= this.clientIp());
  }

  /** Count this request; a 429 Response when the caller is over `maxRequests`. */
  async request(identity: Identity | null): Promise<Response | null> {
    if (!this.runtime.rateLimit.enabled) return null;
    this.caller = rateLimitCaller(identity, this.ip);
    return this.count('requests', 1, identity, 'request');
  }

  /** Count the tools/call messages of a POST body; a 429 Response when over `maxToolCalls`. */
  async toolCalls(messages: unknown[], identity: Identity | null): Promise<Response | null> {
    if (!this.runtime.rateLimit.enabled) return null;
    const calls = messages.filter((m) => (m as { method?: unknown } | null)?.method === 'tools/call');
    if (calls.length === 0) return null;
    const name = (calls[0] as { params?: { name?: unknown } }).params?.name;
    return this.count('toolCalls', calls.length, identity, typeof name === 'string' ? name : 'tools/call');
  }

  /** Put the RateLimit headers on an allowed answer. */
  stamp(res: Response): Response {
    if (this.decisions.length === 0) return res;
    const headers = this.runtime.rateLimit.headers(this.decisions);
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

  private async count(kind: 'requests' | 'toolCalls', units: number, identity: Identity | null, path: string): Promise<Response | null> {
    const limiter = this.runtime.rateLimit;
    const decision = await limiter.hit(kind, this.caller || rateLimitCaller(identity, this.ip), units);
    this.decisions.push(decision);
    if (!decision || decision.allowed) return null;
    const err: CoreError = limiter.refusal(decision, this.decisions);
    this.runtime.security.record({
      type: 'rate_limited',
      reason: 'RATE_LIMITED',
      message: err.message,
      transport: 'mcp',
      ip: this.ip,
      sub: identity?.sub,
      path,
      detail: { kind, limit: decision.limit },
    });
    const body = { jsonrpc: '2.0', id: null, error: { code: JSONRPC_CODE_BY_TRPC.TOO_MANY_REQUESTS, message: err.message, data: err.details } };
    return new Response(JSON.stringify(body), { status: 429, headers: { 'content-type': 'application/json', ...err.headers } });
  }
}

/** Security event for a 401/403 the MCP transport answers itself (nothing reaches the procedures). */
export function recordChallenge(runtime: Runtime, ip: string, status: 401 | 403, error: CoreError | null): void {
  runtime.security.record({
    type: error ? 'auth_failed' : 'auth_required',
    reason: error?.appCode ?? 'UNAUTHORIZED',
    message: error?.message ?? 'authentication required',
    transport: 'mcp',
    ip,
    detail: { status },
  });
}
