import type { Context as HonoContext, Handler } from 'hono';
import { randomUUID } from 'node:crypto';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { EventStore } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CoreError, publicBaseUrl, toolCallNeedsAuth, toolsListNeedsAuth, type Identity, type Runtime } from '@ai-backend/core';
import { readJsonBody } from '../http/readJsonBody.js';
import { bearerToken, clientIp, tokenInQuery } from '../http/requestFacts.js';
import { createMcpServer, type McpRequestFacts } from './createMcpServer.js';
import { MemoryEventStore } from './eventStores/MemoryEventStore.js';
import { StorageEventStore } from './eventStores/StorageEventStore.js';
import type { RootsSync } from './rootsSync.js';
import { McpLimits, recordChallenge } from './mcpLimits.js';
import { createOriginGuard } from './originGuard.js';
import { buildToolCatalog, type ToolCatalog } from './toolCatalog.js';

interface Session {
  transport: WebStandardStreamableHTTPServerTransport;
  server: Server;
  roots: RootsSync;
  /** The identity that opened the session; later requests must come from the same one. */
  owner: string | null;
  lastSeen: number;
}

export interface McpHandlerOptions {
  /** Idle sessions are closed after this many ms. Default 30 minutes. */
  sessionIdleMs?: number;
  /** Upper bound on concurrent sessions. Default 10000. */
  maxSessions?: number;
  /**
   * How POST requests are answered: 'sse' streams (progress, logs and server-to-client requests
   * can travel on them) or single 'json' bodies. Default: 'sse' when stateful, 'json' stateless.
   */
  responseMode?: 'sse' | 'json';
  /**
   * Resumability (Last-Event-ID) for SSE streams: 'memory' (default, per session, bounded),
   * 'storage' (core Storage, e.g. redis, so events survive the process), or 'none'.
   */
  eventStore?: 'memory' | 'storage' | 'none';
  /** The SSE `retry` hint sent in priming events, in ms. Default 1000. */
  retryIntervalMs?: number;
}

const jsonRpcError = (status: number, code: number, message: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });

/**
 * /mcp: MCP Streamable HTTP on the SDK's web-standard transport. This layer does only what
 * must happen at HTTP level: origin checks, the bearer token (verified once per request),
 * the 401/403 challenge MCP clients need to start OAuth, body limits and session routing.
 * Tool calls themselves go through core's invoke seam and tRPC middleware.
 */
export class McpHandler {
  private readonly sessions = new Map<string, Session>();
  private readonly sweeper: NodeJS.Timeout;
  private readonly guard: (headers: Headers) => string | null;
  readonly catalog: ToolCatalog;

  constructor(private readonly runtime: Runtime, private readonly opts: McpHandlerOptions = {}) {
    this.catalog = buildToolCatalog(runtime.router);
    this.guard = createOriginGuard(runtime.config);
    const idle = opts.sessionIdleMs ?? 30 * 60_000;
    this.sweeper = setInterval(() => {
      const cutoff = Date.now() - idle;
      for (const [id, s] of this.sessions) if (s.lastSeen < cutoff) void this.closeSession(id);
    }, Math.min(idle, 60_000));
    this.sweeper.unref();
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  private async closeSession(id: string): Promise<void> {
    const s = this.sessions.get(id);
    if (!s) return;
    this.sessions.delete(id);
    await s.transport.close().catch(() => undefined);
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    await Promise.all([...this.sessions.keys()].map((id) => this.closeSession(id)));
  }

  private challenge(c: HonoContext, status: 401 | 403, error: CoreError | null): Response {
    recordChallenge(this.runtime, clientIp(c, this.runtime.config.trustProxy), status, error);
    const base = publicBaseUrl(c.req.url, c.req.raw.headers, this.runtime.config);
    const parts = [`resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`];
    if (error) {
      const code = status === 403 ? 'insufficient_scope' : 'invalid_token';
      parts.unshift(`error="${code}"`, `error_description="${error.message.replace(/["\\]/g, '')}"`);
      const scopes = error.details?.requiredScopes;
      if (Array.isArray(scopes)) parts.push(`scope="${scopes.join(' ')}"`);
    }
    const message = error?.message ?? 'authentication required';
    return jsonRpcError(status, -32001, message, { 'WWW-Authenticate': `Bearer ${parts.join(', ')}` });
  }

  /** Does any message in this POST need an authenticated caller (access rules 1–3)? */
  private needsAuth(messages: unknown[]): boolean {
    const cfg = this.runtime.config;
    if (cfg.mcp.auth.authType === 'none') return false;
    return messages.some((m) => {
      const msg = m as { method?: unknown; params?: { name?: unknown } };
      if (msg.method === 'tools/list') return toolsListNeedsAuth(cfg);
      if (msg.method === 'tools/call') {
        const name = typeof msg.params?.name === 'string' ? msg.params.name : undefined;
        const tool = name ? this.catalog.byName.get(name) : undefined;
        return tool ? toolCallNeedsAuth(cfg, tool.meta, name) : false;
      }
      return false;
    });
  }

  readonly handle: Handler = async (c) => {
    // Rate limits (mcp.rateLimiting): counted inside serve, RateLimit headers stamped here.
    const limits = new McpLimits(this.runtime, clientIp(c, this.runtime.config.trustProxy));
    return limits.stamp(await this.serve(c, limits));
  };

  private async serve(c: HonoContext, limits: McpLimits): Promise<Response> {
    const runtime = this.runtime;
    const refused = this.guard(c.req.raw.headers);
    if (refused) return jsonRpcError(403, -32000, `forbidden: ${refused}`);
    if (tokenInQuery(new URL(c.req.url))) {
      return this.challenge(c, 401, new CoreError('INVALID_TOKEN', 'tokens in the query string are not accepted'));
    }

    const token = bearerToken(c.req.raw);
    let identity: Identity | null = null;
    let credentialError: CoreError | null = null;
    if (token) {
      const r = await runtime.authenticate(token);
      if (r.ok) identity = r.identity;
      else credentialError = r.error;
    }
    // Counted before a bad credential is refused, so floods of bad tokens are limited too.
    const overLimit = await limits.request(identity);
    if (overLimit) return overLimit;
    // A presented credential is always verified; a bad one is refused, never ignored.
    if (credentialError) return this.challenge(c, credentialError.appCode === 'INSUFFICIENT_SCOPE' ? 403 : 401, credentialError);

    const facts: McpRequestFacts = { identity, credentialError, ip: clientIp(c, runtime.config.trustProxy), headers: c.req.raw.headers };
    const authInfo = { token: token ?? '', clientId: identity?.clientId ?? identity?.sub ?? 'anonymous', scopes: identity?.scopes ?? [], extra: { facts } };
    const sessionId = c.req.header('mcp-session-id');

    if (c.req.method === 'POST') {
      const body = await readJsonBody(c.req.raw, runtime.config.limits.bodyLimit, runtime.config.limits.maxJsonDepth);
      if (!body.ok) return jsonRpcError(body.status, body.status === 413 ? -32600 : -32700, body.message);
      const messages = Array.isArray(body.value) ? body.value : [body.value];
      if (!identity && this.needsAuth(messages)) return this.challenge(c, 401, null);
      const overToolLimit = await limits.toolCalls(messages, identity);
      if (overToolLimit) return overToolLimit;

      if (runtime.config.mcp.sessionMode === 'stateless') return this.handleStateless(c.req.raw, body.value, authInfo);

      if (!sessionId) {
        if (!messages.some((m) => isInitializeRequest(m))) {
          return jsonRpcError(400, -32000, 'Bad Request: Mcp-Session-Id header is required');
        }
        return this.openSession(c.req.raw, body.value, authInfo, identity);
      }
      const session = this.lookup(sessionId, identity);
      if (session instanceof Response) return session;
      return session.transport.handleRequest(c.req.raw, { parsedBody: body.value, authInfo });
    }

    if (c.req.method === 'GET' || c.req.method === 'DELETE') {
      if (runtime.config.mcp.sessionMode === 'stateless') return jsonRpcError(405, -32000, 'Method not allowed in stateless mode', { Allow: 'POST' });
      if (!sessionId) return jsonRpcError(400, -32000, 'Bad Request: Mcp-Session-Id header is required');
      const session = this.lookup(sessionId, identity);
      if (session instanceof Response) return session;
      const res = await session.transport.handleRequest(c.req.raw, { authInfo });
      if (c.req.method === 'DELETE') this.sessions.delete(sessionId);
      // The GET stream is the channel for server-initiated requests such as roots/list.
      else if (res.ok && res.headers.get('content-type')?.includes('text/event-stream')) session.roots.streamOpened();
      return res;
    }
    return jsonRpcError(405, -32000, 'Method not allowed', { Allow: 'GET, POST, DELETE' });
  }

  private lookup(sessionId: string, identity: Identity | null): Session | Response {
    const session = this.sessions.get(sessionId);
    if (!session) return jsonRpcError(404, -32001, 'Session not found');
    // Sessions are bound to the identity that opened them (MCP security best practices).
    if (session.owner !== null && session.owner !== identity?.sub) return jsonRpcError(404, -32001, 'Session not found');
    session.lastSeen = Date.now();
    return session;
  }

  private createEventStore(sessionId: string): EventStore | undefined {
    const kind = this.opts.eventStore ?? 'memory';
    if (kind === 'none') return undefined;
    return kind === 'storage' ? new StorageEventStore(this.runtime.storage, sessionId) : new MemoryEventStore();
  }

  private async openSession(req: Request, body: unknown, authInfo: object, identity: Identity | null): Promise<Response> {
    if (this.sessions.size >= (this.opts.maxSessions ?? 10_000)) return jsonRpcError(503, -32000, 'too many sessions', { 'Retry-After': '30' });
    // The id is drawn up front so a storage-backed event store can be keyed by it.
    const sid = randomUUID();
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => sid,
      enableJsonResponse: (this.opts.responseMode ?? 'sse') === 'json',
      eventStore: this.createEventStore(sid),
      retryInterval: this.opts.retryIntervalMs ?? 1000,
      onsessioninitialized: (id) => {
        this.sessions.set(id, { transport, server, roots, owner: identity?.sub ?? null, lastSeen: Date.now() });
      },
      onsessionclosed: (id) => {
        this.sessions.delete(id);
      },
    });
    const { server, roots } = createMcpServer(this.runtime, this.catalog, () => transport.sessionId, 'stateful');
    await server.connect(transport);
    return transport.handleRequest(req, { parsedBody: body, authInfo: authInfo as never });
  }

  private async handleStateless(req: Request, body: unknown, authInfo: object): Promise<Response> {
    const json = (this.opts.responseMode ?? 'json') === 'json';
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: json });
    const { server } = createMcpServer(this.runtime, this.catalog, () => undefined, 'stateless');
    await server.connect(transport);
    let res: Response;
    try {
      res = await transport.handleRequest(req, { parsedBody: body, authInfo: authInfo as never });
    } catch (err) {
      void server.close();
      throw err;
    }
    // A JSON answer is complete here; an SSE one when its stream ends (or the client leaves).
    if (!res.body || !res.headers.get('content-type')?.includes('text/event-stream')) {
      void server.close();
      return res;
    }
    const reader = res.body.getReader();
    const done = () => void server.close();
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done: end, value } = await reader.read();
        if (end) {
          controller.close();
          done();
        } else controller.enqueue(value);
      },
      cancel(reason) {
        done();
        return reader.cancel(reason);
      },
    });
    return new Response(stream, { status: res.status, headers: res.headers });
  }
}
