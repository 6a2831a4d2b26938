import type { Context as HonoContext, Handler } from 'hono';
import { randomUUID } from 'node:crypto';
import { StreamCounter, type ClosableResponse } from './StreamCounter.js';
import {
  isInitializeRequest,
  WebStandardStreamableHTTPServerTransport,
  type AuthInfo,
  type EventStore,
  type LoggingLevel,
  type Server,
} from '@modelcontextprotocol/server';
import { createRequestStateSeal, type RequestStateSeal } from './requestStateSeal.js';
import {
  toolsListNeedsAuth,
  toWireError,
  type Challenge,
  type EntryGateway,
  type Identity,
  type ParsedCall,
  type RequestScope,
} from '@ai-backend/core/internal';
import { readJsonBody } from '../edge/readJsonBody.js';
import { clientIp } from '../edge/requestFacts.js';
import { createMcpServer, type McpRequestFacts } from './createMcpServer.js';
import { MemoryEventStore } from './eventStores/MemoryEventStore.js';
import { StorageEventStore } from './eventStores/StorageEventStore.js';
import type { RootsSync } from './rootsSync.js';
import { SessionRecords, type SessionRecord } from './sessionRecords.js';
import { SessionMoves } from './SessionMoves.js';
import { handleStatelessRequest, type StatelessCalls } from './statelessRequest.js';
import { McpLimits, recordChallenge } from './mcpLimits.js';
import { EventLedger } from './eventStores/EventLedger.js';
import { failSafeEventStore } from './eventStores/failSafeEventStore.js';
import { formatEventId } from './eventStores/eventId.js';
import type { McpServerServices, McpSessionState } from './sessionState.js';
import type { McpHandlerDeps, McpServices } from './mcpServices.js';
import { SessionBudget, type BudgetedSession } from './sessionBudget.js';
import { ClusterSessionCounts } from './clusterSessionCounts.js';
import { buildToolCatalog, type ToolCatalog } from './toolCatalog.js';
import { ModernEndpoint } from './modernEndpoint.js';
import { isLegacyMcpRequest } from './isLegacyMcpRequest.js';
import { duplicateIdResponse, InFlightIds } from './InFlightIds.js';
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

/** What a 2025 session holds while it is used: the SDK transport and server with our handlers (about 17 KB). */
interface LiveSession {
  transport: WebStandardStreamableHTTPServerTransport;
  server: Server;
  roots: RootsSync;
  state: McpSessionState;
  /** A rebuild is replaying initialize: its answer goes to nobody and is not kept for replay. */
  replaying: boolean;
  /** Request ids still unanswered: a request reusing one is refused (InFlightIds). */
  ids: InFlightIds;
}

/**
 * One 2025 session. While used it is live; once idle it is parked: the transport and server
 * are closed and only what rebuilding them takes is kept (owner, the client's initialize params,
 * the log level, and the event store while it still holds events), about 1 KB. The next request
 * rebuilds it by replaying initialize, as another instance does from a session record.
 */
interface Session extends BudgetedSession {
  id: string;
  /** The identity that opened the session; later requests must come from the same one. */
  owner: string | null;
  /** The client's initialize params (protocol version, capabilities, client info): what a rebuild replays. */
  init: Record<string, unknown>;
  /** logging/setLevel, carried over a park. */
  logLevel: LoggingLevel;
  /**
   * Its in-memory event store (resumability), kept over a park while it holds events; its bytes go back to the shared budget when the
   * session ends.
   */
  store: MemoryEventStore | undefined;
  live: LiveSession | undefined;
  /** A rebuild in progress, shared by requests that arrive together. */
  waking: Promise<LiveSession> | undefined;
  /** Answers to this session not finished yet (POST streams, the GET stream). */
  open: number;
  /**
   * Counted in this instance's session budget. A shared session counts on the instance that
   * served it last (SessionMoves): another one taking it over uncounts this copy.
   */
  counted: boolean;
}

export interface McpHandlerOptions {
  /** Idle sessions are closed after this many ms. Default 30 minutes. */
  sessionIdleMs?: number;
  /** Upper bound on concurrent sessions. Default 10000. */
  maxSessions?: number;
  /** A session with nothing running and no open stream is parked after this many ms without a request. Default 60000. */
  parkIdleMs?: number;
  /** Live sessions kept at most; beyond it the least recently used idle ones are parked at once. Default 256. */
  maxLiveSessions?: number;
  /**
   * Resumability (Last-Event-ID) for SSE streams: 'memory' (per session, bounded), 'storage'
   * (core Storage, so events outlive the process), or 'none'. Default: 'storage' when the
   * storage backend is redis (several instances), else 'memory'.
   */
  eventStore?: 'memory' | 'storage' | 'none';
  /** The SSE `retry` hint sent in priming events, in ms. Default 1000. */
  retryIntervalMs?: number;
  /**
   * Keep a record of each session in core Storage so any instance sharing it (redis) can serve
   * any session: several instances behind a load balancer without sticky sessions. Default:
   * on when eventStore is 'storage'.
   */
  sessionRecords?: boolean;
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
  | { kind: 'stateful'; responseMode: 'sse' | 'json' }
  /** `calls`: the stateless calls running here, so a later notifications/cancelled can reach them. */
  | { kind: 'stateless'; responseMode: 'sse' | 'json'; calls: StatelessCalls };

/** What a request took: its place in the stream admission (see McpHandler.admit) and its session. */
interface PlaceHolder {
  place?: StreamPlace;
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

const jsonRpcError = (status: number, code: number, message: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });

/**
 * /mcp: MCP Streamable HTTP on the SDK's web-standard transport. This layer does only what
 * must happen at HTTP level (origin checks and body limits run before it, in createServer): the bearer token (verified once per request),
 * the 401/403 challenge MCP clients need to start OAuth, body limits and session routing.
 * Tool calls themselves go through core's invoke seam and tRPC middleware.
 */
export class McpHandler {
  /** Every session, live or parked, in the order they opened (eviction picks by `lastSeen`). */
  private readonly sessions = new Map<string, Session>();
  /** Live sessions (parking picks by `lastSeen`). */
  private readonly live = new Set<Session>();
  private readonly parkIdleMs: number;
  private readonly maxLive: number;
  private readonly sweeper: NodeJS.Timeout;
  private readonly records: SessionRecords | undefined;
  /** With session records: the other instances' takeovers and ends of shared sessions. */
  private readonly moves: SessionMoves | undefined;
  private readonly eventStoreKind: 'memory' | 'storage' | 'none';
  private readonly rehydrating = new Map<string, Promise<Session | undefined>>();
  /** Sessions per address / identity, anonymous ceiling, short lifetimes (mcp.budgets). */
  private readonly budget: SessionBudget;
  /** With a store other instances share (Redis, PostgreSQL), the session budget counts their sessions too. */
  private readonly cluster: ClusterSessionCounts | undefined;
  /** The byte budget all in-memory event stores share. */
  private readonly ledger: EventLedger;
  private lastStoreWarning = 0;
  readonly catalog: ToolCatalog;
  /** 2025 requests: sessions, or stateless (chosen once). */
  private readonly legacy: LegacyEndpoint;
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

  constructor(
    { entry, services }: McpHandlerDeps,
    private readonly opts: McpHandlerOptions = {},
  ) {
    const { config, logger } = entry;
    this.entry = entry;
    this.services = services;
    const { prompts, resources, gateway, clientWorkspaces, shared, signals } = services;
    this.serverServices = { router: entry.router, logger, prompts, resources, gateway, clientWorkspaces };
    this.admission = opts.streams ?? new StreamAdmission(streamCapsOf(config.limits));
    this.catalog = buildToolCatalog(entry.router);
    this.seal = createRequestStateSeal({ config, logger, shared });
    // How POSTs are answered is resolved once, in config (`mcp.responseMode` → `mcp.responseModes`, one default).
    const modes = config.mcp.responseModes;
    this.legacy =
      config.mcp.sessionMode === 'stateless'
        ? { kind: 'stateless', responseMode: modes.legacy, calls: new Map() }
        : { kind: 'stateful', responseMode: modes.legacy };
    this.modern = new ModernEndpoint({ ...this.serverServices, shared, signals }, this.catalog, this.seal, {
      responseMode: modes.modern,
      bodyLimit: config.limits.bodyLimit,
    });
    const idle = opts.sessionIdleMs ?? 30 * 60_000;
    this.eventStoreKind = opts.eventStore ?? (shared.kind === 'redis' ? 'storage' : 'memory');
    this.records = (opts.sessionRecords ?? this.eventStoreKind === 'storage') ? new SessionRecords(shared, idle) : undefined;
    this.moves = this.records
      ? new SessionMoves(signals, {
          taken: (id) => {
            const s = this.sessions.get(id);
            if (!s?.counted) return;
            s.counted = false;
            this.budget.remove(s);
          },
          ended: (id) => {
            // A rebuild under way would register the session again when its replay ends: closed after it.
            const waking = this.sessions.get(id)?.waking;
            if (waking) void waking.catch(() => undefined).then(() => this.closeSession(id));
            else void this.closeSession(id);
          },
        })
      : undefined;
    this.budget = new SessionBudget(
      config.mcp.budgets,
      opts.maxSessions ?? 10_000,
      () => this.cluster?.elsewhere,
      () => void this.cluster?.sync(),
    );
    this.cluster =
      shared.kind === 'redis' || shared.kind === 'postgres'
        ? new ClusterSessionCounts(
            shared,
            () => this.budget.own(),
            (err) => logger.debug('MCP session counts not shared this beat', { error: String(err) }),
          )
        : undefined;
    this.ledger = new EventLedger(config.mcp.budgets.eventStore.totalBytes);
    this.parkIdleMs = opts.parkIdleMs ?? 60_000;
    this.maxLive = opts.maxLiveSessions ?? 256;
    const eventTtlMs = config.mcp.budgets.eventStore.ttlMs;
    this.sweeper = setInterval(
      () => {
        const now = Date.now();
        // Events past the resumability window go, also those of sessions nobody comes back to.
        this.ledger.expire(now - eventTtlMs);
        for (const [id, s] of this.sessions) {
          if (s.lastSeen < now - idle || this.budget.expired(s, now)) void this.closeSession(id);
          else if (s.live && this.idle(s) && now - s.lastSeen >= this.parkIdleMs) this.park(s);
          else if (!s.live && s.store?.size === 0) s.store = undefined;
        }
      },
      Math.min(idle, 60_000, this.budget.sweepEveryMs, this.parkIdleMs),
    );
    this.sweeper.unref();
  }

  /** Open sessions, live and parked. */
  get sessionCount(): number {
    return this.sessions.size;
  }

  /** Sessions holding an SDK transport and server now (the rest are parked). */
  get liveSessionCount(): number {
    return this.live.size;
  }

  /** Open SSE streams (metrics). */
  get streamCount(): number {
    return this.streams.count;
  }

  private readonly streams = new StreamCounter();

  private async closeSession(id: string): Promise<void> {
    const s = this.forget(id);
    if (!s) return;
    this.records?.forget(id);
    await s.live?.transport.close().catch(() => undefined);
  }

  /** Take a session out of the map and give back its budget, its events and its roots (idempotent). */
  private forget(id: string): Session | undefined {
    const s = this.sessions.get(id);
    if (!s) return undefined;
    this.sessions.delete(id);
    this.live.delete(s);
    if (s.counted) this.budget.remove(s);
    s.store?.dispose();
    this.services.clientWorkspaces.clearSession(id);
    return s;
  }

  /** Nothing of the session is running or open, so closing its transport loses nothing. */
  private idle(s: Session): boolean {
    const live = s.live;
    // A session subscribed to resources waits for updates: it stays live.
    return (
      live !== undefined &&
      s.waking === undefined &&
      s.open === 0 &&
      s.initialized &&
      live.state.running === 0 &&
      !live.state.subscriptions?.size
    );
  }

  /** Close an idle session's transport and server, keeping what a rebuild needs. */
  private park(s: Session): void {
    const live = s.live!;
    s.live = undefined;
    this.live.delete(s);
    s.logLevel = live.state.logLevel;
    // An empty store has nothing to resume: a rebuild starts a new one.
    if (s.store && s.store.size === 0) s.store = undefined;
    // The server's cleanup (server.onclose) removes its registry listeners; the roots stay with the session.
    void live.transport.close().catch(() => undefined);
  }

  /**
   * At the session cap, a new client would get 503 for as long as sessions nobody comes back to
   * stay (30 minutes): the least recently used one that has been idle for `parkIdleMs` is closed
   * instead (its client, if it ever returns, gets 404 and starts a new session, as after a restart).
   * `owner`: at that identity's own budget, only its sessions (a client restarted without DELETE
   * left them behind; others' sessions are never given up for it).
   */
  private evictOldestIdle(owner?: string): void {
    const now = Date.now();
    let oldest: [string, Session] | undefined;
    for (const entry of this.sessions) {
      const s = entry[1];
      if (owner !== undefined && s.owner !== owner) continue;
      if (now - s.lastSeen < this.parkIdleMs || (oldest && s.lastSeen >= oldest[1].lastSeen)) continue;
      if (s.live ? this.idle(s) : s.waking === undefined && s.open === 0) oldest = entry;
    }
    if (!oldest) return;
    this.entry.logger.debug('MCP session evicted at the session cap', { sessionId: oldest[0] });
    void this.closeSession(oldest[0]);
  }

  /** Over the live cap: park the least recently used idle sessions. */
  private parkOverCap(): void {
    if (this.live.size <= this.maxLive) return;
    const idle = [...this.live].filter((s) => this.idle(s)).sort((x, y) => x.lastSeen - y.lastSeen);
    for (const s of idle) {
      if (this.live.size <= this.maxLive) break;
      this.park(s);
    }
  }

  /** A request of `s` was answered: it may be idle now. */
  private answered(s: Session): void {
    s.open--;
    s.lastSeen = Date.now();
    this.parkOverCap();
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.moves?.close();
    await this.modern.close();
    await Promise.all([...this.sessions.keys()].map((id) => this.closeSession(id)));
    await this.cluster?.stop();
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
      if (holder.session) this.answered(holder.session);
      throw err;
    }
    if (holder.refused) closeAfterRefusal(outgoing);
    const session = holder.session;
    const stream = holder.isStream ? holder.isStream(res) : isEventStream(res);
    // A place taken for an answer that may stream is kept until it ends, given back now when it is not a stream.
    if (holder.place) {
      if (stream) res = this.admission.hold(res, holder.place, outgoing, 'any-body');
      else holder.place();
    }
    return limits.stamp(this.streams.track(res, kind, outgoing, session && (() => this.answered(session)), stream));
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
      const caller = identity ? `sub:${identity.sub}` : `ip:${scope.facts.ip}`;
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
      return this.openSession(c.req.raw, body, authInfo, identity, scope.facts.ip, holder);
    }
    const session = await this.lookup(sessionId, identity, authInfo, scope.facts.ip);
    if (session instanceof Response) return session;
    if (messages.some((m) => (m as { method?: unknown } | null)?.method === 'notifications/initialized')) session.initialized = true;
    const live = await this.wake(session, authInfo, holder);
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
      if (this.legacy.kind === 'stateless') return jsonRpcError(405, -32000, 'Method not allowed in stateless mode', { Allow: 'POST' });
      if (!sessionId) return jsonRpcError(400, -32000, 'Bad Request: Mcp-Session-Id header is required');
      const session = await this.lookup(sessionId, identity, authInfo, scope.facts.ip);
      if (session instanceof Response) return session;
      if (c.req.method === 'GET') {
        const refused = this.admit(holder, scope);
        if (refused) return refused;
      }
      const live = await this.wake(session, authInfo, holder);
      if (!live) return jsonRpcError(404, -32001, 'Session not found');
      const res = await live.transport.handleRequest(c.req.raw, { authInfo });
      // A DELETE the transport accepted ended the session (it closed itself). One it refused (an
      // unsupported MCP-Protocol-Version) ended nothing: forgotten here, its open transport and
      // server were out of reach of everything that closes them, for good.
      if (c.req.method === 'DELETE') {
        if (res.ok) {
          this.forget(sessionId);
          await this.records?.remove(sessionId);
          this.moves?.ended(sessionId);
        }
      }
      // The GET stream is the channel for server-initiated requests such as roots/list.
      else if (res.ok && res.headers.get('content-type')?.includes('text/event-stream')) live.roots.streamOpened();
      return res;
    }
    return jsonRpcError(405, -32000, 'Method not allowed', { Allow: 'GET, POST, DELETE' });
  }

  private async lookup(sessionId: string, identity: Identity | null, authInfo: object, ip: string): Promise<Session | Response> {
    const session = this.sessions.get(sessionId) ?? (await this.rehydrate(sessionId, identity, authInfo, ip));
    if (!session) return jsonRpcError(404, -32001, 'Session not found');
    // Sessions are bound to the identity that opened them (MCP security best practices).
    if (session.owner !== null && session.owner !== identity?.sub) return jsonRpcError(404, -32001, 'Session not found');
    if (session.owner === null && identity) {
      // An anonymous session is claimed by the first identity that uses it (clients sign in after
      // a 401 and retry on the same session); from then on it is bound like any other.
      session.owner = identity.sub;
      if (session.counted) this.budget.claimed(session.ip, identity.sub);
      void this.records?.save(sessionId, { owner: session.owner, init: session.init }).catch(() => undefined);
    }
    // Not moved to the end of `sessions` or `live` (delete and add again): a Map or Set keeps a
    // deleted entry in its bucket's chain until it rehashes, so with thousands of sessions a busy
    // one's every lookup walked the dead entries its own requests left. Eviction and parking find
    // the least recently used by `lastSeen`.
    session.lastSeen = Date.now();
    if (!session.counted) {
      // Back from another instance, which served it meanwhile: counted here again, not there.
      session.counted = true;
      this.budget.add(session);
      this.moves?.taken(sessionId);
    }
    this.records?.touch(sessionId, () => ({ owner: session.owner, init: session.init }));
    return session;
  }

  /**
   * The live transport of `s`, rebuilt if it was parked; counted as open against `s` from here
   * until `answered`. Undefined when the rebuild failed (the client starts a new session).
   */
  private async wake(s: Session, authInfo: object, holder: PlaceHolder): Promise<LiveSession | undefined> {
    s.open++;
    holder.session = s;
    if (s.live) return s.live;
    s.waking ??= (async () => {
      const live = await this.startLive(s);
      await this.replayed(live, s, authInfo);
      return live;
    })().finally(() => (s.waking = undefined));
    try {
      const live = await s.waking;
      this.live.add(s);
      this.parkOverCap();
      return live;
    } catch (err) {
      this.entry.logger.warn('MCP session could not be rebuilt', { error: err instanceof Error ? err.message : String(err) });
      void this.closeSession(s.id);
      return undefined;
    }
  }

  /**
   * Bring a fresh transport and server to where the session was: its initialize handshake,
   * replayed with the client's own params (the negotiated version and capabilities follow).
   */
  private async replayInitialize(live: LiveSession, s: Session, authInfo: object): Promise<void> {
    const url = 'http://localhost/mcp';
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const initialize = { jsonrpc: '2.0', id: `rehydrate-${s.id}`, method: 'initialize', params: s.init };
    live.replaying = true;
    try {
      await (
        await live.transport.handleRequest(new Request(url, { method: 'POST', headers }), {
          parsedBody: initialize,
          authInfo: authInfo as never,
        })
      ).text();
      const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
      await live.transport.handleRequest(new Request(url, { method: 'POST', headers: { ...headers, 'mcp-session-id': s.id } }), {
        parsedBody: initialized,
        authInfo: authInfo as never,
      });
    } finally {
      live.replaying = false;
    }
    if (!s.live) throw new Error('the replayed initialize did not open the session');
  }

  /** replayInitialize, the pair discarded when the replay fails before it became the session's live pair. */
  private async replayed(live: LiveSession, s: Session, authInfo: object): Promise<void> {
    try {
      await this.replayInitialize(live, s, authInfo);
    } catch (err) {
      if (s.live !== live) this.discard(live);
      throw err;
    }
  }

  /**
   * A session another instance opened (its record is in shared storage): recreate it here by
   * replaying its initialize handshake into a fresh transport and server. Events that instance
   * stored stay replayable (storage event store); a call still running there is not moved.
   */
  private rehydrate(sessionId: string, identity: Identity | null, authInfo: object, ip: string): Promise<Session | undefined> {
    if (!this.records) return Promise.resolve(undefined);
    let pending = this.rehydrating.get(sessionId);
    if (!pending) {
      pending = (async () => {
        const record: SessionRecord | undefined = await this.records!.load(sessionId).catch(() => undefined);
        if (!record || (record.owner !== null && record.owner !== identity?.sub)) return undefined;
        // The session was admitted when it opened and is counted where it was served last (its
        // place moves here with it): only this instance's own cap bounds what a takeover costs.
        // Checked against the budgets, a client at its identity's budget could not move at all.
        if (this.sessions.size >= this.budget.maxSessions) return undefined;
        const s = this.newSession(sessionId, record.owner, record.init, ip);
        // Registered (and counted) by the replayed initialize, live; the request that asked wakes it.
        const live = await this.startLive(s);
        await this.replayed(live, s, authInfo);
        s.initialized = true;
        this.moves?.taken(sessionId);
        this.entry.logger.debug('MCP session taken over from shared storage', { sessionId });
        return this.sessions.get(sessionId);
      })().finally(() => this.rehydrating.delete(sessionId));
      this.rehydrating.set(sessionId, pending);
    }
    return pending;
  }

  /**
   * The event store a live transport of `s` writes to, bounded (mcp.budgets.eventStore) and never
   * able to hold back an answer. An in-memory store stays with the session (`s.store`) across parks.
   */
  private eventStoreFor(s: Session, live: LiveSession): EventStore | undefined {
    const kind = this.eventStoreKind;
    if (kind === 'none') return undefined;
    const b = this.entry.config.mcp.budgets.eventStore;
    const limits = { ttlMs: b.ttlMs, maxEventsPerStream: b.maxEventsPerStream, maxEventBytes: b.maxEventBytes };
    const store =
      kind === 'storage'
        ? new StorageEventStore(this.services.shared, s.id, { ...limits, sessionBytes: b.sessionBytes, totalBytes: b.totalBytes })
        : (s.store ??= new MemoryEventStore({ ...limits, maxBytes: b.sessionBytes, ledger: this.ledger }));
    // The memory store answers at once: errors are caught, but no timer races it.
    const safe = failSafeEventStore(store, kind === 'storage' ? b.timeoutMs : undefined, (op, err) => {
      if (Date.now() - this.lastStoreWarning < 10_000) return;
      this.lastStoreWarning = Date.now();
      this.entry.logger.warn('MCP event store unavailable; messages are sent without resumability', {
        op,
        error: err instanceof Error ? err.message : String(err),
      });
    });
    const storeEvent = safe.storeEvent.bind(safe);
    // A rebuild's replayed initialize is answered to nobody: nothing of it is kept for replay.
    safe.storeEvent = (streamId, message) => (live.replaying ? Promise.resolve(formatEventId(streamId, 0)) : storeEvent(streamId, message));
    return safe;
  }

  private newSession(id: string, owner: string | null, init: Record<string, unknown>, ip: string): Session {
    const now = Date.now();
    return {
      id,
      owner,
      init,
      ip,
      logLevel: 'info',
      store: undefined,
      live: undefined,
      waking: undefined,
      open: 0,
      counted: false,
      initialized: false,
      createdAt: now,
      lastSeen: now,
    };
  }

  private async openSession(
    req: Request,
    body: unknown,
    authInfo: object,
    identity: Identity | null,
    ip: string,
    holder: PlaceHolder,
  ): Promise<Response> {
    const owner = identity?.sub ?? null;
    await this.cluster?.ready;
    if (this.sessions.size >= this.budget.maxSessions) this.evictOldestIdle();
    if (owner !== null && this.budget.identityFull(owner)) this.evictOldestIdle(owner);
    const refused = this.budget.admit(ip, owner, this.sessions.size);
    if (refused) return jsonRpcError(refused.status, -32000, refused.message, { 'Retry-After': String(refused.retryAfterSec) });
    const messages: unknown[] = Array.isArray(body) ? body : [body];
    const init = (messages.find((m) => isInitializeRequest(m)) as { params?: Record<string, unknown> } | undefined)?.params ?? {};
    // The id is drawn up front so a storage-backed event store can be keyed by it.
    const s = this.newSession(randomUUID(), owner, init, ip);
    const live = await this.startLive(s);
    s.open++;
    holder.session = s;
    try {
      return await live.transport.handleRequest(req, { parsedBody: body, authInfo: authInfo as never });
    } finally {
      // Refused by the transport before it initialized (406 Accept, 415, a batch with two
      // initializes): no session holds this pair, so nothing else would ever close it.
      if (s.live !== live) this.discard(live);
    }
  }

  /**
   * Close a transport and server that never became a session's live pair. The server registered
   * listeners on the prompt, resource and gateway registries when it was made; only its close
   * removes them, and until then they keep the whole pair (about 14 KB) reachable for good.
   */
  private discard(live: LiveSession): void {
    void live.transport.close().catch(() => undefined);
  }

  /**
   * A transport and server for session `s`. Its initialize (the client's, or a replay) makes it
   * the session's live pair, and registers (and counts) a session not registered yet.
   */
  private async startLive(s: Session): Promise<LiveSession> {
    const live = { replaying: false, ids: new InFlightIds() } as LiveSession;
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => s.id,
      enableJsonResponse: this.legacy.responseMode === 'json',
      eventStore: this.eventStoreFor(s, live),
      retryInterval: this.opts.retryIntervalMs ?? 1000,
      onsessioninitialized: (id) => {
        s.live = live;
        this.live.add(s);
        if (this.sessions.has(id)) return;
        this.sessions.set(id, s);
        s.counted = true;
        this.budget.add(s);
        // Not awaited: the initialize answer must not wait on storage (Redis down or slow).
        void this.records?.save(id, { owner: s.owner, init: s.init }).catch((err: unknown) => {
          this.entry.logger.warn('MCP session record not saved', { error: err instanceof Error ? err.message : String(err) });
        });
      },
      // DELETE: the session ends (a parked pair closing is not a session closing).
      onsessionclosed: (id) => {
        if (s.live === live) this.forget(id);
      },
    });
    const { server, roots, state } = createMcpServer(this.serverServices, this.catalog, this.seal, () => transport.sessionId, 'stateful');
    state.logLevel = s.logLevel;
    Object.assign(live, { transport, server, roots, state });
    await server.connect(transport);
    live.ids.watch(transport);
    return live;
  }
}
