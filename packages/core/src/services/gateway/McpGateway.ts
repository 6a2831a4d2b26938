import { randomUUID } from 'node:crypto';
import type { CallToolResult, GetPromptResult, ReadResourceResult } from './mcpWire.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { Identity } from '../../kernel/identity.js';
import type { Logger } from '../../kernel/Logger.js';
import type { Storage } from '../../kernel/Storage.js';
import type { Signals } from '../../kernel/Signals.js';
import type { ResolvedConfig } from '../../config/schema.js';
import type { McpServerConfig } from '../../config/sections/mcpServers.js';
import type { Metering } from '../metering/Metering.js';
import { exposedName, keyAllowsServer, keyAllowsTool, serverAllows, serverExposesTool, splitExposedName } from './gatewayAccess.js';
import { searchTools } from './toolSearch.js';
import { UpstreamConnection, type CallOptions, type ConnectionState, type ListKind } from './UpstreamConnection.js';
import { UserConnections } from './UserConnections.js';
import { StoredServers, type ValueSealer } from './StoredServers.js';
import { guardedUpstream, upstreamUrlProblem, type UpstreamHttp } from './guardUpstream.js';
import { SEARCH_TOOLS, searchToolDefinitions, type GatewayTool } from './gatewayTools.js';

/**
 * Per-user credentials of `perUser` servers (the credentials part of the gateway: static headers
 * in the vault, or OAuth tokens to the upstream). 'missing' and 'expired' reach the caller as a
 * tool error with `message`, which says how to (re)connect.
 */
type Resolved = { kind: 'headers'; headers: Record<string, string> } | { kind: 'missing' | 'expired'; message: string };
export interface GatewayCredentials {
  resolve(req: { server: { name: string; url: string }; userId: string }): Promise<Resolved>;
  /** The upstream answered 401 to `headers`: fresh ones (a refreshed token), or why there are none. */
  rejected(req: { server: { name: string; url: string }; userId: string; headers: Record<string, string> }): Promise<Resolved>;
}

export interface McpGatewayOptions {
  config: ResolvedConfig;
  logger: Logger;
  /** Where servers added at run time live (every instance reads them). */
  storage: Storage;
  /** Announces servers added or removed to the other instances. */
  signals: Signals;
  /** Read the stored servers this often as well (a shared store without shared signals); undefined: signals only. */
  pollMs?: number;
  metering: Metering;
  credentials?: GatewayCredentials;
  /** Seals the credentials of servers added at run time (the key vault's; CredentialStore). */
  sealer?: ValueSealer;
  /** A call finished: statistics and metrics per configured server name. */
  onCall?: (server: string, outcome: 'ok' | 'tool_error' | 'error', seconds: number) => void;
}

export interface ServerEntry {
  name: string;
  config: McpServerConfig;
  source: 'config' | 'api';
  /** The shared connection (servers that are not perUser). */
  shared: UpstreamConnection | undefined;
}

/** What a server looks like on a status page (administrators) or a listing (callers). */
export interface ServerStatus {
  name: string;
  type: McpServerConfig['type'];
  source: 'config' | 'api';
  enabled: boolean;
  perUser: boolean;
  expose: 'tools' | 'search';
  state: ConnectionState['kind'];
  error?: string;
  tools: number;
}

/** What only administrators see of a server (gateway.serverStatus, the console's MCP view). */
export interface AdminServerStatus {
  stderr?: string;
  pid?: number | null;
  calls: number;
  errors: number;
  userConnections: number;
  description?: string;
  /** When a failed connection tries again (ISO time). */
  retryAt?: string;
  /** Who may use the server: null is no restriction; credentials says how perUser servers' users bring theirs. */
  access: { allowScopes: string[] | null; allowUsers: string[] | null; credentials: 'oauth' | 'headers' | null };
  /** The shared connection's tools as clients see them (`<server>__<tool>`, allow/deny applied), descriptions cut to 500 characters. */
  toolList: Array<{ name: string; description: string }>;
}

/** A caller's call of an upstream tool, as every entry point gives it. */
export interface GatewayCall extends CallOptions {
  identity: Identity | null;
  ip?: string;
}

/**
 * The MCP gateway (docs/mcp-gateway.md): the upstream MCP servers of `mcpServers` and those
 * added at run time, their connections (shared, or one per user for `perUser` servers), what
 * each caller may see of them, and their calls, metered like AI calls when priced. Entry points
 * (/mcp, gateway.* on /trpc and /rpc) only ask it; it never knows which one did.
 */
export class McpGateway {
  private readonly servers = new Map<string, ServerEntry>();
  private readonly users: UserConnections;
  private readonly stored: StoredServers;
  private readonly listeners = new Set<(kinds: ReadonlySet<ListKind>) => void>();
  private readonly guarded: UpstreamHttp | undefined;

  constructor(private readonly opts: McpGatewayOptions) {
    const g = opts.config.gateway;
    this.users = new UserConnections(g.maxUserConnections, g.userConnectionIdleMs);
    this.stored = new StoredServers(
      opts.storage,
      opts.signals,
      opts.pollMs,
      (servers) => this.applyStored(servers),
      opts.logger,
      opts.sealer,
    );
    this.guarded = guardedUpstream(g);
    for (const [name, server] of Object.entries(opts.config.mcpServers)) this.add(name, server, 'config');
  }

  /** A server's configuration, configured or added at run time (the credential flows look perUser servers up here). */
  serverConfig(name: string): McpServerConfig | undefined {
    return this.servers.get(name)?.config;
  }

  /** Any upstream server configured or added: the entry points consult the gateway only then. */

  get active(): boolean {
    return this.servers.size > 0;
  }

  /** Start shared connections and the sync of servers added at run time. */
  start(): void {
    for (const entry of this.servers.values()) void entry.shared?.ready().catch(() => undefined);
    this.stored.start();
  }

  async close(): Promise<void> {
    clearTimeout(this.changeTimer);
    this.stored.stop();
    await Promise.all([...this.servers.values()].map((e) => e.shared?.close()));
    await this.users.closeAll();
  }

  /**
   * Called when any server's tools, prompts or resources may have changed (list_changed, connect,
   * loss, add/remove), with the lists that did.
   */
  onChange(fn: (kinds: ReadonlySet<ListKind>) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private changeTimer: NodeJS.Timeout | undefined;
  private changedKinds = new Set<ListKind>();

  /** Listeners hear of changes at most every 50 ms (a reconnect and its relisting are one change to a client). */
  private changed(kind?: ListKind): void {
    for (const k of kind ? [kind] : (['tools', 'prompts', 'resources'] as const)) this.changedKinds.add(k);
    if (this.changeTimer) return;
    this.changeTimer = setTimeout(() => {
      this.changeTimer = undefined;
      const kinds = this.changedKinds;
      this.changedKinds = new Set();
      for (const fn of this.listeners) fn(kinds);
    }, 50);
    this.changeTimer.unref();
  }

  private add(name: string, config: McpServerConfig, source: 'config' | 'api'): void {
    const shared =
      config.enabled && !config.perUser ? this.connection(name, config, config.type === 'stdio' ? {} : config.headers, 'eager') : undefined;
    this.servers.set(name, { name, config, source, shared });
  }

  private connection(
    name: string,
    server: McpServerConfig,
    headers: Record<string, string>,
    reconnect: 'eager' | 'onUse',
  ): UpstreamConnection {
    return new UpstreamConnection({
      name,
      server,
      headers,
      logger: this.opts.logger,
      maxResultBytes: this.opts.config.gateway.maxResultBytes,
      // A server's own allowPrivateNetwork (config file only) lifts the guard for it alone.
      ...(this.guarded && !(server.type !== 'stdio' && server.allowPrivateNetwork) ? { http: this.guarded } : {}),
      onChange: (kind) => this.changed(kind),
      reconnect,
    });
  }

  /** Servers added through gateway.addServer, as the store has them now (every instance). */
  private applyStored(stored: ReadonlyMap<string, McpServerConfig>): void {
    let changed = false;
    for (const [name, entry] of this.servers) {
      if (entry.source !== 'api') continue;
      const now = stored.get(name);
      if (now && JSON.stringify(now) === JSON.stringify(entry.config)) continue;
      this.servers.delete(name);
      void entry.shared?.close();
      void this.users.closeServer(name);
      changed = true;
    }
    for (const [name, config] of stored) {
      if (this.servers.has(name)) continue;
      this.add(name, config, 'api');
      void this.servers
        .get(name)!
        .shared?.ready()
        .catch(() => undefined);
      changed = true;
    }
    if (changed) this.changed();
  }

  /** gateway.addServer: a remote server, stored for every instance. Stdio never comes from an API (it would run a command). */
  async addServer(name: string, config: McpServerConfig): Promise<void> {
    if (config.type === 'stdio')
      throw new CoreError(
        'FORBIDDEN',
        'stdio servers come only from the config file: adding one through an API would let a caller run a command',
      );
    const configured = this.servers.get(name);
    if (configured?.source === 'config') throw new CoreError('CONFLICT', `MCP server "${name}" is in the config file; change it there`);
    if (config.allowPrivateNetwork && !this.opts.config.gateway.allowPrivateNetwork) {
      throw new CoreError(
        'FORBIDDEN',
        `MCP server "${name}": allowPrivateNetwork can be set in the config file only (or gateway.allowPrivateNetwork for every upstream)`,
        { details: { reason: 'ssrf_blocked' } },
      );
    }
    const problem = upstreamUrlProblem(config.url, this.opts.config.gateway);
    if (problem) throw new CoreError('BAD_REQUEST', `MCP server "${name}": ${problem}`, { details: { reason: 'ssrf_blocked' } });
    await this.stored.put(name, config);
  }

  async removeServer(name: string): Promise<boolean> {
    if (this.servers.get(name)?.source === 'config')
      throw new CoreError('CONFLICT', `MCP server "${name}" is in the config file; remove it there`);
    return this.stored.remove(name);
  }

  /** Every server with its health (administrators: gateway.serverStatus, the console). */
  status(): Array<ServerStatus & AdminServerStatus> {
    return [...this.servers.values()].map((e) => ({
      ...this.summary(e),
      ...(e.shared?.state.kind === 'failed' ? { retryAt: new Date(e.shared.state.retryAt).toISOString() } : {}),
      access: {
        allowScopes: e.config.allowScopes ?? null,
        allowUsers: e.config.allowUsers ?? null,
        // perUser: how each user brings credentials (OAuth to the upstream, or headers through gateway.setCredentials).
        credentials: e.config.perUser ? (e.config.type !== 'stdio' && e.config.oauth ? 'oauth' : 'headers') : null,
      },
      // The shared connection's tools as clients see them, after the server's allow/deny rules; perUser servers list
      // per user, so none here. Descriptions are the upstream's untrusted text, cut to 500 characters.
      toolList: (e.shared?.lists.tools ?? [])
        .filter((t) => serverExposesTool(e.config, t.name))
        .map((t) => ({ name: exposedName(e.name, t.name), description: (t.description ?? '').slice(0, 500) })),
      ...(e.shared
        ? {
            pid: e.shared.pid,
            calls: e.shared.counts.calls,
            errors: e.shared.counts.errors,
            ...(e.shared.stderrTail ? { stderr: e.shared.stderrTail } : {}),
          }
        : { calls: 0, errors: 0 }),
      userConnections: this.users.countFor(e.name),
      ...(e.config.description ? { description: e.config.description } : {}),
    }));
  }

  private summary(e: ServerEntry): ServerStatus {
    const state = e.shared?.state ?? { kind: e.config.enabled ? ('idle' as const) : ('idle' as const) };
    // A reconnect in progress still shows the last attempt's error: a flapping upstream's cause stays visible.
    const error = state.kind === 'failed' ? state.error : state.kind === 'connecting' ? state.lastError : undefined;
    return {
      name: e.name,
      type: e.config.type,
      source: e.source,
      enabled: e.config.enabled,
      perUser: e.config.perUser,
      expose: e.config.expose,
      state: state.kind,
      ...(error !== undefined ? { error } : {}),
      tools: e.shared?.lists.tools.length ?? 0,
    };
  }

  /** Every scope an enabled server's `allowScopes` names: an API key holding one needs its owner to hold it too (serverAllows). */
  allowScopes(): ReadonlySet<string> {
    const out = new Set<string>();
    for (const e of this.servers.values()) if (e.config.enabled) for (const s of e.config.allowScopes ?? []) out.add(s);
    return out;
  }

  /** The servers this caller may use (gateway.listServers). */
  listServers(identity: Identity | null): ServerStatus[] {
    return [...this.servers.values()].filter((e) => serverAllows(e.config, identity)).map((e) => this.summary(e));
  }

  /** The connection serving `identity` on `entry`: the shared one, or the user's own (perUser), opened with their credentials. */
  private async connectionFor(entry: ServerEntry, identity: Identity | null): Promise<UpstreamConnection> {
    if (entry.shared) return entry.shared;
    const config = entry.config;
    if (config.type === 'stdio') throw new CoreError('INTERNAL', 'a perUser stdio server');
    if (!identity) throw new CoreError('UNAUTHORIZED', `MCP server "${entry.name}" needs each user's own credentials: sign in first`);
    if (!this.opts.credentials) {
      throw new CoreError(
        'FORBIDDEN',
        `MCP server "${entry.name}" needs your own credentials, and this server stores none yet (gateway.setCredentials is not available)`,
        { details: { reason: 'credentials_missing', server: entry.name } },
      );
    }
    const creds = await this.opts.credentials.resolve({ server: { name: entry.name, url: config.url }, userId: identity.sub });
    if (creds.kind !== 'headers')
      throw new CoreError('FORBIDDEN', creds.message, { details: { reason: `credentials_${creds.kind}`, server: entry.name } });
    // Shared headers first, the user's over them (names compare case-insensitively: the config keeps the case it was
    // written in, stored names are lower-case, and both would otherwise be sent); new credentials open a new connection.
    const own = new Set(Object.keys(creds.headers).map((k) => k.toLowerCase()));
    const shared = Object.entries(config.headers).filter(([k]) => !own.has(k.toLowerCase()));
    const headers = { ...Object.fromEntries(shared), ...creds.headers };
    return this.users.get(entry.name, identity.sub, headers, () => this.connection(entry.name, config, headers, 'onUse'));
  }

  /**
   * The tools this caller sees: each allowed server's tools under `<server>__<tool>`, minus the
   * server's deny rules and what the caller's API key does not name; servers exposed as 'search'
   * contribute search_tools and call_tool instead. Per-user servers are listed once the user's
   * connection is open (their lists depend on the credentials).
   */
  async listTools(identity: Identity | null): Promise<GatewayTool[]> {
    const out: GatewayTool[] = [];
    let searchable = false;
    for (const entry of this.servers.values()) {
      if (!serverAllows(entry.config, identity)) continue;
      const conn =
        entry.shared ??
        (await this.connectionFor(entry, identity)
          .then((c) => c.ready().then(() => c))
          .catch(() => undefined));
      if (!conn) continue;
      const tools = this.toolsOf(entry, conn, identity);
      if (entry.config.expose === 'search') searchable ||= tools.length > 0;
      else out.push(...tools);
    }
    if (searchable) out.push(...searchToolDefinitions().filter((t) => keyAllowsTool(identity, t.name)));
    return out;
  }

  private toolsOf(entry: ServerEntry, conn: UpstreamConnection, identity: Identity | null): GatewayTool[] {
    const out: GatewayTool[] = [];
    for (const t of conn.lists.tools) {
      const name = exposedName(entry.name, t.name);
      if (!serverExposesTool(entry.config, t.name) || !keyAllowsTool(identity, name)) continue;
      out.push({ ...t, name, server: entry.name, upstreamName: t.name } as GatewayTool);
    }
    return out;
  }

  /** search_tools: the best matches among the tools of 'search' servers this caller may use. */
  async search(identity: Identity | null, query: string, limit: number): Promise<GatewayTool[]> {
    const pool: GatewayTool[] = [];
    for (const entry of this.servers.values()) {
      if (entry.config.expose !== 'search' || !serverAllows(entry.config, identity)) continue;
      const conn = await this.connectionFor(entry, identity).catch(() => undefined);
      if (!conn) continue;
      await conn.ready().catch(() => undefined);
      pool.push(...this.toolsOf(entry, conn, identity));
    }
    return searchTools(pool, query, limit);
  }

  /** Is `name` an upstream tool (or search_tools / call_tool) this caller may call? Anything else is answered like an unknown tool. */
  resolveTool(identity: Identity | null, name: string): { server: ServerEntry; tool: string } | 'search' | undefined {
    if (SEARCH_TOOLS.has(name))
      return [...this.servers.values()].some((e) => e.config.expose === 'search' && serverAllows(e.config, identity)) &&
        keyAllowsTool(identity, name)
        ? 'search'
        : undefined;
    const parts = splitExposedName(name);
    const entry = parts && this.servers.get(parts.server);
    if (!parts || !entry || !serverAllows(entry.config, identity)) return undefined;
    if (!serverExposesTool(entry.config, parts.name) || !keyAllowsTool(identity, name)) return undefined;
    return { server: entry, tool: parts.name };
  }

  /**
   * Call an upstream tool by the name clients see. Unknown and forbidden tools fail alike
   * (NOT_FOUND "unknown tool"), so a caller learns nothing of tools it may not use. A priced tool
   * is held before the call and settled after a successful one (a failed call, or a tool error,
   * costs nothing), through the same billing entry as AI calls.
   */
  async callTool(call: GatewayCall, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    try {
      return await this.callToolOnce(call, name, args);
    } catch (err) {
      // A per-user upstream refused the user's credentials: once more with fresh ones, or the reason why there are none.
      if (!(await this.freshCredentialsAfter(err, call.identity, name))) throw err;
      return this.callToolOnce(call, name, args);
    }
  }

  /**
   * After an upstream's 401 on a perUser server: ask the credentials service (a refreshed OAuth
   * token; a revoked grant or refused static headers become a FORBIDDEN saying what to call).
   * True when there are fresh credentials to try once more.
   */
  private async freshCredentialsAfter(err: unknown, identity: Identity | null, name: string): Promise<boolean> {
    if (!(err instanceof CoreError) || err.details?.reason !== 'upstream_unauthorized' || !identity || !this.opts.credentials) return false;
    const target = this.resolveTool(identity, name);
    if (!target || target === 'search' || target.server.shared || target.server.config.type === 'stdio') return false;
    const server = { name: target.server.name, url: target.server.config.url };
    const refused = (c: { kind: 'missing' | 'expired'; message: string }) =>
      new CoreError('FORBIDDEN', c.message, { details: { reason: `credentials_${c.kind}`, server: server.name } });
    // What was sent is what is stored, unless a refresh replaced it meanwhile (then that one is tried).
    const sent = await this.opts.credentials.resolve({ server, userId: identity.sub });
    if (sent.kind !== 'headers') throw refused(sent);
    const next = await this.opts.credentials.rejected({ server, userId: identity.sub, headers: sent.headers });
    if (next.kind !== 'headers') throw refused(next);
    return true;
  }

  private async callToolOnce(call: GatewayCall, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    const target = this.resolveTool(call.identity, name);
    if (target === 'search') return this.callSearchTool(call, name, args);
    if (!target) throw unknownTool(name);
    const { server, tool } = target;
    // An upstream that lists the tool no more (or never did) is not asked.
    const conn = await this.connectionFor(server, call.identity);
    await conn.ready();
    if (!conn.lists.tools.some((t) => t.name === tool)) throw unknownTool(name);
    // Own entries only: an upstream tool named like an Object property (toString, constructor) is priced like any other.
    const { tools: prices, tokensPerCall } = server.config.pricing;
    const price = Object.hasOwn(prices, tool) ? prices[tool]! : tokensPerCall;
    const started = performance.now();
    const hold =
      price > 0
        ? await this.opts.metering.hold({
            identity: call.identity,
            ...(call.ip ? { ip: call.ip } : {}),
            requestId: randomUUID(),
            provider: `mcp:${server.name}`,
            estimatedTokens: price,
            byokAllowed: false,
            serverPays: true,
          })
        : undefined;
    let result: CallToolResult;
    try {
      result = await conn.callTool(tool, args, call);
    } catch (err) {
      await hold?.release('mcp tool call failed');
      this.opts.onCall?.(server.name, 'error', (performance.now() - started) / 1000);
      throw err;
    }
    if (result.isError) await hold?.release('mcp tool answered an error');
    else await hold?.settle({ tokensUsed: price, provider: `mcp:${server.name}`, model: tool, metadata: { type: 'mcp_tool', name } });
    this.opts.onCall?.(server.name, result.isError ? 'tool_error' : 'ok', (performance.now() - started) / 1000);
    return result;
  }

  private async callSearchTool(call: GatewayCall, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    if (name === 'search_tools') {
      const query = typeof args.query === 'string' ? args.query : '';
      const limit = typeof args.limit === 'number' && args.limit > 0 ? Math.min(Math.floor(args.limit), 50) : 10;
      const found = await this.search(call.identity, query, limit);
      const tools = found.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }));
      return { content: [{ type: 'text', text: JSON.stringify({ tools }) }], structuredContent: { tools } };
    }
    const target = typeof args.name === 'string' ? this.resolveTool(call.identity, args.name) : undefined;
    // call_tool reaches only the tools search_tools can find: those of 'search' servers.
    if (!target || target === 'search' || target.server.config.expose !== 'search')
      throw unknownTool(typeof args.name === 'string' ? args.name : '');
    const inner = args.arguments;
    return this.callTool(
      call,
      args.name as string,
      inner && typeof inner === 'object' && !Array.isArray(inner) ? (inner as Record<string, unknown>) : {},
    );
  }

  /**
   * Upstream prompts under `<server>__<prompt>`, for the servers this caller may use (shared
   * connections only); an API key's `tools` rule applies to these names as to tool names.
   */
  listPrompts(identity: Identity | null): Array<{ name: string; description?: string; arguments?: unknown[] }> {
    const out: Array<{ name: string; description?: string; arguments?: unknown[] }> = [];
    for (const e of this.servers.values()) {
      if (!e.shared || !serverAllows(e.config, identity)) continue;
      for (const p of e.shared.lists.prompts) {
        const name = exposedName(e.name, p.name);
        if (keyAllowsTool(identity, name)) out.push({ ...p, name });
      }
    }
    return out;
  }

  async getPrompt(
    identity: Identity | null,
    name: string,
    args: Record<string, string>,
    signal?: AbortSignal,
  ): Promise<GetPromptResult | undefined> {
    const parts = splitExposedName(name);
    const e = parts && this.servers.get(parts.server);
    if (!parts || !e?.shared || !serverAllows(e.config, identity) || !keyAllowsTool(identity, name)) return undefined;
    if (!e.shared.lists.prompts.some((p) => p.name === parts.name)) return undefined;
    return e.shared.getPrompt(parts.name, args, signal);
  }

  /**
   * Upstream resources keep their own URIs (they are the upstream's names); the server they came
   * from is remembered for reads. Through an API key with a `tools` rule, only the servers it
   * admits whole (keyAllowsServer).
   */
  listResources(identity: Identity | null): Array<{ uri: string; name: string; server: string; [k: string]: unknown }> {
    const out: Array<{ uri: string; name: string; server: string }> = [];
    for (const e of this.servers.values()) {
      if (!e.shared || !serverAllows(e.config, identity) || !keyAllowsServer(identity, e.name)) continue;
      for (const r of e.shared.lists.resources) out.push({ ...r, server: e.name });
    }
    return out;
  }

  async readResource(identity: Identity | null, uri: string, signal?: AbortSignal): Promise<ReadResourceResult | undefined> {
    for (const e of this.servers.values()) {
      if (!e.shared || !serverAllows(e.config, identity) || !keyAllowsServer(identity, e.name)) continue;
      if (!e.shared.lists.resources.some((r) => r.uri === uri)) continue;
      return e.shared.readResource(uri, signal);
    }
    return undefined;
  }
}

export function unknownTool(name: string): CoreError {
  return new CoreError('NOT_FOUND', `unknown tool: ${name.slice(0, 200)}`, { details: { reason: 'unknown_tool' } });
}
