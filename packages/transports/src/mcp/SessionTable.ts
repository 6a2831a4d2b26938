import { randomUUID } from 'node:crypto';
import {
  isInitializeRequest,
  WebStandardStreamableHTTPServerTransport,
  type EventStore,
  type LoggingLevel,
  type Server,
} from '@modelcontextprotocol/server';
import { isCoreError, type EntryGateway, type Identity } from '@ai-backend/core/internal';
import type { RequestStateSeal } from './requestStateSeal.js';
import { createMcpServer } from './createMcpServer.js';
import { MemoryEventStore } from './eventStores/MemoryEventStore.js';
import { StorageEventStore } from './eventStores/StorageEventStore.js';
import type { RootsSync } from './rootsSync.js';
import { SessionRecords, type SessionRecord } from './sessionRecords.js';
import { SessionMoves } from './SessionMoves.js';
import { EventLedger } from './eventStores/EventLedger.js';
import { failSafeEventStore } from './eventStores/failSafeEventStore.js';
import { formatEventId } from './eventStores/eventId.js';
import type { McpServerServices, McpSessionState } from './sessionState.js';
import type { McpServices } from './mcpServices.js';
import { SessionBudget, type BudgetedSession } from './sessionBudget.js';
import { ClusterSessionCounts } from './clusterSessionCounts.js';
import type { ToolCatalog } from './toolCatalog.js';
import { InFlightIds } from './InFlightIds.js';
import { jsonRpcError } from './mcpErrors.js';

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
export interface Session extends BudgetedSession {
  id: string;
  /** The identity that opened the session; later requests must come from the same one. */
  owner: string | null;
  /**
   * The API key it was opened with (its id), if any: later requests must present the same key,
   * not another of the owner's keys nor the owner's own sign-in (least privilege: a narrower
   * credential never reads a session's replayed events or state that a wider one produced).
   */
  key: string | undefined;
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

/** How a handler keeps its 2025 sessions (McpHandlerOptions adds the stream admission). */
export interface SessionTableOptions {
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
}

/** What a request handed to a session records, so the end of its answer is counted against that session (SessionTable.answered). */
export interface SessionHolder {
  session?: Session;
}

/** What a SessionTable is made of: the handler's gateway, services and tool catalog, and how POSTs are answered. */
export interface SessionTableDeps {
  entry: EntryGateway;
  services: McpServices;
  serverServices: McpServerServices;
  catalog: ToolCatalog;
  seal: RequestStateSeal;
  responseMode: 'sse' | 'json';
}

/**
 * The 2025 sessions of one instance (`mcp.sessionMode: 'stateful'`): opened by an initialize,
 * found by their id (here, or rebuilt from a record another instance sharing the store wrote),
 * parked when idle and rebuilt when used again, closed when idle too long, deleted or evicted at
 * a budget. The handler (McpHandler) routes requests to them; it makes a table only in the
 * stateful mode.
 */
export class SessionTable {
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
  private readonly entry: EntryGateway;
  private readonly services: McpServices;
  private readonly serverServices: McpServerServices;
  private readonly catalog: ToolCatalog;
  private readonly seal: RequestStateSeal;
  private readonly responseMode: 'sse' | 'json';

  constructor(
    deps: SessionTableDeps,
    private readonly opts: SessionTableOptions = {},
  ) {
    this.entry = deps.entry;
    this.services = deps.services;
    this.serverServices = deps.serverServices;
    this.catalog = deps.catalog;
    this.seal = deps.seal;
    this.responseMode = deps.responseMode;
    const { config, logger } = this.entry;
    const { shared, signals } = this.services;
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
  get count(): number {
    return this.sessions.size;
  }

  /** Sessions holding an SDK transport and server now (the rest are parked). */
  get liveCount(): number {
    return this.live.size;
  }

  /** A DELETE the SDK transport accepted ended session `id` (it closed itself): forgotten here, its record and its copies elsewhere too. */
  async deleted(id: string): Promise<void> {
    this.forget(id);
    await this.records?.remove(id);
    this.moves?.ended(id);
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.moves?.close();
    await Promise.all([...this.sessions.keys()].map((id) => this.closeSession(id)));
    await this.cluster?.stop();
  }

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
    void this.services.clientWorkspaces
      .clearSession(id)
      .catch((err: unknown) =>
        this.serverServices.logger.warn('could not clear the client workspaces of a closed MCP session', { error: String(err) }),
      );
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
  answered(s: Session): void {
    s.open--;
    s.lastSeen = Date.now();
    this.parkOverCap();
  }

  async lookup(sessionId: string, identity: Identity | null, authInfo: object, ip: string): Promise<Session | Response> {
    let session: Session | undefined;
    try {
      session = this.sessions.get(sessionId) ?? (await this.rehydrate(sessionId, identity, authInfo, ip));
    } catch (err) {
      // The shared store could not say whether another instance holds the session (Redis down):
      // a 404 tells an MCP client its session is gone, and it starts over with a new one, losing
      // what it had, though the session is still there once Redis is back. So 503, like every
      // other answer that waits for the store.
      if (isCoreError(err) && err.appCode === 'UNAVAILABLE') return jsonRpcError(503, -32053, 'storage unavailable');
      throw err;
    }
    if (!session) return jsonRpcError(404, -32001, 'Session not found');
    // Sessions are bound to the identity that opened them (MCP security best practices).
    if (session.owner !== null && !sameCredential(session, identity)) return jsonRpcError(404, -32001, 'Session not found');
    if (session.owner === null && identity) {
      // An anonymous session is claimed by the first identity that uses it (clients sign in after
      // a 401 and retry on the same session); from then on it is bound like any other.
      session.owner = identity.sub;
      session.key = identity.apiKey?.id;
      if (session.counted) this.budget.claimed(session.ip, identity.sub);
      void this.records?.save(sessionId, recordOf(session)).catch(() => undefined);
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
    this.records?.touch(sessionId, () => recordOf(session));
    return session;
  }

  /**
   * The live transport of `s`, rebuilt if it was parked; counted as open against `s` from here
   * until `answered`. Undefined when the rebuild failed (the client starts a new session).
   */
  async wake(s: Session, authInfo: object, holder: SessionHolder): Promise<LiveSession | undefined> {
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
        // A failed read is not an absent record: it goes up to lookup, which answers 503.
        const record: SessionRecord | undefined = await this.records!.load(sessionId);
        if (!record || (record.owner !== null && !sameCredential(record, identity))) return undefined;
        // The session was admitted when it opened and is counted where it was served last (its
        // place moves here with it): only this instance's own cap bounds what a takeover costs.
        // Checked against the budgets, a client at its identity's budget could not move at all.
        if (this.sessions.size >= this.budget.maxSessions) return undefined;
        const s = this.newSession(sessionId, record.owner, record.key, record.init, ip);
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

  private newSession(id: string, owner: string | null, key: string | undefined, init: Record<string, unknown>, ip: string): Session {
    const now = Date.now();
    return {
      id,
      owner,
      key,
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

  async open(
    req: Request,
    body: unknown,
    authInfo: object,
    identity: Identity | null,
    ip: string,
    holder: SessionHolder,
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
    const s = this.newSession(randomUUID(), owner, identity?.apiKey?.id, init, ip);
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
      enableJsonResponse: this.responseMode === 'json',
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
        void this.records?.save(id, recordOf(s)).catch((err: unknown) => {
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

/** What a session's record keeps of it (the key only when it was opened with one). */
function recordOf(s: Session): SessionRecord {
  return s.key === undefined ? { owner: s.owner, init: s.init } : { owner: s.owner, key: s.key, init: s.init };
}

/** Is `identity` the credential a session (or its record) was opened with: the same owner, and the same API key or none? */
function sameCredential(s: { owner: string | null; key?: string }, identity: Identity | null): boolean {
  return s.owner === identity?.sub && s.key === identity?.apiKey?.id;
}
