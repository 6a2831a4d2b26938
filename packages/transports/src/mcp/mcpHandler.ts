import type { Context as HonoContext, Handler } from 'hono';
import { StreamCounter, type ClosableResponse } from './StreamCounter.js';
import type { AuthInfo } from '@modelcontextprotocol/server';
import { isInitializeRequest } from '@modelcontextprotocol/server';
import { createRequestStateSeal, subjectOrAddress, type RequestStateSeal } from './requestStateSeal.js';
import {
  toolsListNeedsAuth,
  toWireError,
  type Challenge,
  type EntryGateway,
  type ParsedCall,
  type RequestScope,
} from '@ai-backend/core/internal';
import { readJsonBody } from '../edge/readJsonBody.js';
import { clientIp } from '../edge/requestFacts.js';
import type { McpRequestFacts } from './createMcpServer.js';
import { handleStatelessRequest, type StatelessCalls } from './statelessRequest.js';
import { McpLimits, recordChallenge } from './mcpLimits.js';
import type { McpServerServices } from './sessionState.js';
import type { McpHandlerDeps, McpServices } from './mcpServices.js';
import { buildToolCatalog, type ToolCatalog } from './toolCatalog.js';
import { ModernEndpoint } from './modernEndpoint.js';
import { isLegacyMcpRequest } from './isLegacyMcpRequest.js';
import { duplicateIdResponse } from './InFlightIds.js';
import { jsonRpcError } from './mcpErrors.js';
import { unreadableSubscription } from './registerResources.js';
import { SessionTable, type Session, type SessionTableOptions } from './SessionTable.js';
import {
  closeAfterRefusal,
  isEventStream,
  isRefusal,
  refusalResponse,
  StreamAdmission,
  streamCapsOf,
  type StreamPlace,
} from '../edge/StreamAdmission.js';
import { serveEntry } from '../edge/serveEntry.js';

/** The messages of an admitted POST (one, or a batch), and its body as parsed. */
interface McpMessages {
  body: unknown;
  messages: unknown[];
}

export interface McpHandlerOptions extends SessionTableOptions {
  /**
   * The server's admission of long-lived streams (limits.maxSseStreams*), shared with its other
   * entry points. Default: one of this handler's own, from the server's config.
   */
  streams?: StreamAdmission;
}

/**
 * How this handler serves 2025 requests, chosen once at construction from `mcp.sessionMode`
 * (2026-07-28 requests always go to the ModernEndpoint): sessions, or one server per POST.
 */
type LegacyEndpoint =
  /** `sessions`: the 2025 sessions this instance holds. */
  | { kind: 'stateful'; responseMode: 'sse' | 'json'; sessions: SessionTable }
  /** `calls`: the stateless calls running here, so a later notifications/cancelled can reach them. */
  | { kind: 'stateless'; responseMode: 'sse' | 'json'; calls: StatelessCalls };

/** What a request took: its place in the stream admission (see McpHandler.admit) and its session. */
interface PlaceHolder {
  place?: StreamPlace;
  /** The request that took the place: its credential is watched while the stream is held. */
  by?: RequestScope;
  /** The stream admission refused this request (its connection is closed once answered). */
  refused?: boolean;
  /** The session the request was handed to, so its answer's end is counted against it. */
  session?: Session;
  /** Whether the answer is an event stream, where the dispatch knows it without reading the answer's headers (SESSION_ANSWER). */
  isStream?: (res: Response) => boolean;
}

/**
 * Whether the SDK transport's answer to a session POST is an event stream, from the session's
 * response mode and the status alone. Reading the content type instead would turn
 * @hono/node-server's lightweight Response (a plain header object, written as it is) into one
 * with a Headers object, built and then iterated in sorted order on write: work the SDK used
 * directly never does. With JSON answers (enableJsonResponse) a POST is never answered with a
 * stream; with SSE answers every 200 is the call's stream (its refusals are JSON with a 4xx or
 * 5xx status, notifications and responses alone a bodiless 202).
 */
const SESSION_ANSWER: Record<'sse' | 'json', (res: Response) => boolean> = {
  json: () => false,
  sse: (res) => res.status === 200,
};

/** A JSON-RPC request (a method and an id), as opposed to a notification or a response. */
const isRequest = (m: unknown): boolean => {
  const msg = m as { method?: unknown; id?: unknown } | null;
  return typeof msg?.method === 'string' && msg.id !== undefined && msg.id !== null;
};

/**
 * /mcp: MCP Streamable HTTP on the SDK's web-standard transport. This layer does only what
 * must happen at HTTP level (origin checks and body limits run before it, in createServer): the bearer token (verified once per request),
 * the 401/403 challenge MCP clients need to start OAuth, body limits and session routing.
 * Tool calls themselves go through core's invoke seam and tRPC middleware.
 */
export class McpHandler {
  readonly catalog: ToolCatalog;
  /** 2025 requests: sessions, or stateless (chosen once). */
  private readonly legacy: LegacyEndpoint;
  /** The stateful mode's session table (`legacy.sessions`), where a request's answer is counted against its session. */
  private readonly sessions: SessionTable | undefined;
  /** 2026-07-28 requests: stateless, served by the SDK's per-request handler. */
  private readonly modern: ModernEndpoint;
  private readonly seal: RequestStateSeal;
  /** The entry gateway (config, logger, router, request scopes): what every entry point gets. */
  private readonly entry: EntryGateway;
  /** The services MCP uses besides the gateway (mcpServices.ts). */
  private readonly services: McpServices;
  /** What each MCP server's capability handlers get (made once here, not per server). */
  private readonly serverServices: McpServerServices;
  /** Every long-lived answer (GET streams, POST answers streamed as SSE, subscriptions/listen) takes a place here first. */
  private readonly admission: StreamAdmission;

  constructor({ entry, services }: McpHandlerDeps, opts: McpHandlerOptions = {}) {
    const { config, logger } = entry;
    this.entry = entry;
    this.services = services;
    const { prompts, resources, gateway, clientWorkspaces, shared, signals, security } = services;
    this.serverServices = { router: entry.router, logger, prompts, resources, gateway, clientWorkspaces, security };
    this.admission = opts.streams ?? new StreamAdmission(streamCapsOf(config.limits));
    this.catalog = buildToolCatalog(entry.router);
    this.seal = createRequestStateSeal({ config, logger, shared });
    // How POSTs are answered is resolved once, in config (`mcp.responseMode` → `mcp.responseModes`, one default).
    const modes = config.mcp.responseModes;
    this.legacy =
      config.mcp.sessionMode === 'stateless'
        ? { kind: 'stateless', responseMode: modes.legacy, calls: new Map() }
        : {
            kind: 'stateful',
            responseMode: modes.legacy,
            sessions: new SessionTable(
              { entry, services, serverServices: this.serverServices, catalog: this.catalog, seal: this.seal, responseMode: modes.legacy },
              opts,
            ),
          };
    this.sessions = this.legacy.kind === 'stateful' ? this.legacy.sessions : undefined;
    this.modern = new ModernEndpoint({ ...this.serverServices, shared, signals }, this.catalog, this.seal, {
      responseMode: modes.modern,
      bodyLimit: config.limits.bodyLimit,
    });
  }

  /** Open sessions, live and parked. */
  get sessionCount(): number {
    return this.sessions?.count ?? 0;
  }

  /** Sessions holding an SDK transport and server now (the rest are parked). */
  get liveSessionCount(): number {
    return this.sessions?.liveCount ?? 0;
  }

  /** Open SSE streams (metrics). */
  get streamCount(): number {
    return this.streams.count;
  }

  private readonly streams = new StreamCounter();

  async close(): Promise<void> {
    await this.modern.close();
    await this.sessions?.close();
  }

  /** Send core's challenge (401/403 with WWW-Authenticate) as a JSON-RPC error, and log it. */
  private challenge(scope: RequestScope, ch: Challenge): Response {
    recordChallenge(this.services.security, scope.facts.ip, ch.status, scope.credentialError);
    return jsonRpcError(ch.status, -32001, ch.error.message, ch.headers);
  }

  /**
   * The calls a POST body carries, as core sees them: the procedure behind each tools/call,
   * prompts/get and resources/read (prompts and resources not served by a procedure have none).
   * tools/list is not a procedure; its rule is asked separately.
   */
  private parseCalls(messages: unknown[]): { calls: ParsedCall[]; listsTools: boolean } {
    const calls: ParsedCall[] = [];
    let listsTools = false;
    for (const m of messages) {
      const msg = m as { method?: unknown; params?: { name?: unknown; uri?: unknown } } | null;
      const params = msg?.params;
      switch (msg?.method) {
        case 'tools/list':
          listsTools = true;
          break;
        case 'tools/call': {
          const tool = typeof params?.name === 'string' ? this.catalog.byName.get(params.name) : undefined;
          if (tool) calls.push({ kind: 'tool', path: tool.path });
          break;
        }
        case 'prompts/get': {
          const prompt = typeof params?.name === 'string' ? this.services.prompts.get(params.name) : undefined;
          if (prompt) calls.push({ kind: 'prompt', path: prompt.procedure });
          break;
        }
        case 'resources/read':
          if (typeof params?.uri === 'string') calls.push({ kind: 'resource', path: this.services.resources.procedureFor(params.uri) });
          break;
      }
    }
    return { calls, listsTools };
  }

  readonly handle: Handler = async (c) => {
    // Rate limits (mcp.rateLimiting): counted inside serve, RateLimit headers stamped here.
    const limits = new McpLimits(this.services, () => clientIp(c, this.entry.config.trustProxy));
    // The Node response the answer is written to (absent under in-process fetch): its 'close' ends a stream.
    const outgoing = (c.env as { outgoing?: ClosableResponse } | undefined)?.outgoing;
    const kind = c.req.method === 'POST' ? 'post' : 'other';
    const holder: PlaceHolder = {};
    // A POST carries calls (tool calls, prompts, reads): it is in flight until its answer is
    // written, so stop() can let it finish (drain) before it ends the sessions.
    if (kind === 'post') this.streams.postStarted();
    let res: Response;
    try {
      res = await this.serve(c, limits, holder);
    } catch (err) {
      holder.place?.();
      if (kind === 'post') this.streams.postEnded();
      if (holder.session) this.sessions?.answered(holder.session);
      throw err;
    }
    if (holder.refused) closeAfterRefusal(outgoing);
    const session = holder.session;
    const stream = holder.isStream ? holder.isStream(res) : isEventStream(res);
    // A place taken for an answer that may stream is kept until it ends, given back now when it is not a stream.
    if (holder.place) {
      if (stream) res = this.admission.hold(res, holder.place, outgoing, 'any-body', holder.by);
      else holder.place();
    }
    return limits.stamp(this.streams.track(res, kind, outgoing, session && (() => this.sessions?.answered(session)), stream));
  };

  /**
   * Take a place in the stream admission for an answer that may be a long-lived stream (a GET
   * stream, a POST carrying requests: its answer may be streamed as SSE, and subscriptions/listen
   * always is), before it is dispatched, so a refused stream never starts. The place is given
   * back when the answer ends, at once when it is not a stream. A JSON-RPC error when refused.
   */
  private admit(holder: PlaceHolder, scope: RequestScope): Response | undefined {
    const taken = this.admission.take(scope.facts.ip, scope.identity?.sub);
    if (isRefusal(taken)) {
      this.services.security.record({
        type: 'rate_limited',
        reason: 'RATE_LIMITED',
        message: taken.message,
        transport: 'mcp',
        ip: scope.facts.ip,
        sub: scope.identity?.sub,
        path: 'mcp stream',
        detail: { kind: 'streams', cap: taken.cap, limit: taken.limit },
      });
      holder.refused = true;
      return refusalResponse('jsonrpc', taken);
    }
    holder.place = taken;
    holder.by = scope;
    return undefined;
  }

  /**
   * Wait (at most `timeoutMs`) for the POSTs in flight to be answered: graceful stop drains
   * MCP calls like /rpc and /trpc ones, instead of cutting them at once by closing their session.
   */
  async drain(timeoutMs: number): Promise<void> {
    // Running MCP tasks get the same grace period as calls in flight (no new task starts meanwhile).
    const tasks = this.modern.tasks.drain(timeoutMs);
    if (this.streams.inFlight === 0) return tasks;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.streams.settled(), new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
    await tasks;
  }

  /**
   * One /mcp request through the one entry sequence (serveEntry): scope and credential, the
   * request limit (counted before a bad credential is refused, so floods of bad tokens are
   * limited too), the challenge for a refused credential, then for a POST its messages, the
   * access decision per call with the challenge MCP clients start OAuth on, the tool-call limit
   * (429 before dispatch), and the dispatch to the revision and session mode.
   */
  private serve(c: HonoContext, limits: McpLimits, holder: PlaceHolder): Promise<Response> {
    const { config } = this.entry;
    return serveEntry<McpMessages | undefined>(c, this.entry, {
      transport: 'mcp',
      refusals: 'http',
      toolCalls: 'before-dispatch',
      limitRequest: (scope) => limits.request(scope),
      readCalls: async (c, scope) => {
        // An MCP client that only initializes and lists is a caller too (admin.getUserInfo): procedure
        // calls note theirs in core, but initialize, tools/list and streams are not procedure calls.
        if (scope.identity) this.services.users.seen(scope.identity);
        if (c.req.method !== 'POST') return { calls: [], parsed: undefined };
        const body = await readJsonBody(c.req.raw, config.limits.bodyLimit, config.limits.maxJsonDepth);
        if (!body.ok) return jsonRpcError(body.status, body.status === 413 ? -32600 : -32700, body.message);
        const messages = Array.isArray(body.value) ? body.value : [body.value];
        const { calls, listsTools } = this.parseCalls(messages);
        const unreadable = unreadableSubscription(
          this.services,
          this.entry.router,
          { identity: scope.identity, ip: scope.facts.ip },
          messages,
        );
        if (unreadable) return unreadable;
        // tools/list is not a procedure: its own rule, the same sign-in challenge.
        if (!scope.identity && listsTools && toolsListNeedsAuth(config)) return this.challenge(scope, scope.challengeFor(null));
        return { calls, parsed: { body: body.value, messages } };
      },
      refuse: (_c, scope, error, status, headers) => {
        if (status === 401 || status === 403) {
          recordChallenge(this.services.security, scope.facts.ip, status, scope.credentialError);
          return jsonRpcError(status, -32001, error.message, headers);
        }
        if (status === 429) return limits.refusedToolCalls(error, scope);
        const w = toWireError(error);
        return jsonRpcError(w.httpStatus, w.jsonRpcCode, w.message);
      },
      run: (c, scope, parsed) => (parsed ? this.dispatchPost(c, scope, parsed, holder) : this.dispatchOther(c, scope, holder)),
    });
  }

  /** A POST admitted by the entry sequence: to the 2026-07-28 endpoint, the stateless 2025 mode or a session. */
  private async dispatchPost(c: HonoContext, scope: RequestScope, { body, messages }: McpMessages, holder: PlaceHolder): Promise<Response> {
    const { identity } = scope;
    const authInfo = this.authInfoOf(scope);
    const sessionId = c.req.header('mcp-session-id');
    // Notifications and responses alone are answered 202 at once; anything asked may stream.
    if (messages.some(isRequest)) {
      const refused = this.admit(holder, scope);
      if (refused) return refused;
    }

    // The revision is negotiated per request (the SDK's own classification): a request with
    // the 2026-07-28 `_meta` envelope (or a modern MCP-Protocol-Version header) is served
    // statelessly, whatever the session mode; anything else is a 2025 client.
    if (!(await isLegacyMcpRequest(c.req.raw, body))) return this.modern.fetch(c.req.raw, body, authInfo);

    const legacy = this.legacy;
    if (legacy.kind === 'stateless') {
      const caller = subjectOrAddress(scope);
      return handleStatelessRequest({
        services: this.serverServices,
        catalog: this.catalog,
        seal: this.seal,
        req: c.req.raw,
        body,
        authInfo,
        responseMode: legacy.responseMode,
        calls: legacy.calls,
        caller,
      });
    }

    if (!sessionId) {
      if (!messages.some((m) => isInitializeRequest(m))) {
        return jsonRpcError(400, -32000, 'Bad Request: Mcp-Session-Id header is required');
      }
      return legacy.sessions.open(c.req.raw, body, authInfo, identity, scope.facts.ip, holder);
    }
    const session = await legacy.sessions.lookup(sessionId, identity, authInfo, scope.facts.ip);
    if (session instanceof Response) return session;
    if (messages.some((m) => (m as { method?: unknown } | null)?.method === 'notifications/initialized')) session.initialized = true;
    const live = await legacy.sessions.wake(session, authInfo, holder);
    if (!live) return jsonRpcError(404, -32001, 'Session not found');
    const claim = live.ids.claim(messages);
    if ('duplicate' in claim) return duplicateIdResponse(claim.duplicate);
    holder.isStream = SESSION_ANSWER[legacy.responseMode];
    const res = await live.transport.handleRequest(c.req.raw, { parsedBody: body, authInfo });
    // Refused by the transport (a bad header, a closed session): nothing of it runs, its ids stay free.
    if (res.status >= 400) live.ids.release(claim.claimed);
    // The cancels were delivered (the SDK aborted those calls and will never answer them): their POSTs end now.
    else live.ids.answerCancelled(live.transport, claim.cancelled);
    return res;
  }

  /** What the SDK hands our handlers: core's request scope, in `authInfo.extra`. */
  private authInfoOf(scope: RequestScope): AuthInfo {
    const { identity } = scope;
    const facts: McpRequestFacts = { scope };
    return {
      token: scope.facts.bearer ?? '',
      clientId: identity?.clientId ?? identity?.sub ?? 'anonymous',
      scopes: identity?.scopes ?? [],
      extra: { facts },
    };
  }

  /** GET (the session's stream) and DELETE (its end); anything else is not allowed. */
  private async dispatchOther(c: HonoContext, scope: RequestScope, holder: PlaceHolder): Promise<Response> {
    const { identity } = scope;
    const authInfo = this.authInfoOf(scope);
    const sessionId = c.req.header('mcp-session-id');
    if (c.req.method === 'GET' || c.req.method === 'DELETE') {
      const legacy = this.legacy;
      if (legacy.kind === 'stateless') return jsonRpcError(405, -32000, 'Method not allowed in stateless mode', { Allow: 'POST' });
      if (!sessionId) return jsonRpcError(400, -32000, 'Bad Request: Mcp-Session-Id header is required');
      const { sessions } = legacy;
      const session = await sessions.lookup(sessionId, identity, authInfo, scope.facts.ip);
      if (session instanceof Response) return session;
      if (c.req.method === 'GET') {
        const refused = this.admit(holder, scope);
        if (refused) return refused;
      }
      const live = await sessions.wake(session, authInfo, holder);
      if (!live) return jsonRpcError(404, -32001, 'Session not found');
      const res = await live.transport.handleRequest(c.req.raw, { authInfo });
      // A DELETE the transport accepted ended the session (it closed itself). One it refused (an
      // unsupported MCP-Protocol-Version) ended nothing: forgotten here, its open transport and
      // server were out of reach of everything that closes them, for good.
      if (c.req.method === 'DELETE') {
        if (res.ok) await sessions.deleted(sessionId);
      }
      // The GET stream is the channel for server-initiated requests such as roots/list.
      else if (res.ok && res.headers.get('content-type')?.includes('text/event-stream')) live.roots.streamOpened();
      return res;
    }
    return jsonRpcError(405, -32000, 'Method not allowed', { Allow: 'GET, POST, DELETE' });
  }
}
