import type { CallToolResult } from './mcpWire.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { Identity } from '../../kernel/identity.js';
import type { McpServerConfig } from '../../config/sections/mcpServers.js';
import type { Metering } from '../metering/Metering.js';
import { keyToolRefusal } from '../apiKeys/keyRules.js';
import {
  exposedMcpName,
  exposedName,
  keyAllowsServer,
  keyAllowsTool,
  serverAllows,
  serverExposesTool,
  splitExposedName,
} from './gatewayAccess.js';
import { searchTools } from './toolSearch.js';
import type { ListKind, UpstreamConnection } from './UpstreamConnection.js';
import type { UserConnections } from './UserConnections.js';
import { UpstreamContent, type ServerEntry } from './UpstreamContent.js';
import { GatewayServers, type GatewayServersOptions } from './GatewayServers.js';
import { SEARCH_TOOLS, searchToolDefinitions, type GatewayTool } from './gatewayTools.js';
import { exposedItems } from './exposedItems.js';
import type { GatewayCredentials } from './GatewayCredentials.js';
import { adminStatus, serverSummary, type AdminServerStatus, type ServerStatus } from './ServerStatus.js';
import { callOnConnection, type GatewayCall } from './callOnConnection.js';
import { unknownTool, upstreamToolOn, upstreamTools } from './upstreamTools.js';

export interface McpGatewayOptions extends GatewayServersOptions {
  metering: Metering;
  credentials?: GatewayCredentials;
  /** A call finished: statistics and metrics per configured server name. */
  onCall?: (server: string, outcome: 'ok' | 'tool_error' | 'error', seconds: number) => void;
}

export type { ServerEntry } from './UpstreamContent.js';

/**
 * The MCP gateway (docs/mcp-gateway.md): the upstream MCP servers of `mcpServers` and those
 * added at run time, their connections (shared, or one per user for `perUser` servers), what
 * each caller may see of them, and their calls, metered like AI calls when priced. Entry points
 * (/mcp, gateway.* on /trpc and /rpc) only ask it; it never knows which one did.
 */
export class McpGateway {
  private readonly registry: GatewayServers;
  private readonly servers: ReadonlyMap<string, ServerEntry>;
  private readonly users: UserConnections;
  /** The upstreams' prompts, resources, resource templates and completions, for the callers who may use each. */
  readonly content: UpstreamContent;

  constructor(private readonly opts: McpGatewayOptions) {
    this.registry = new GatewayServers(opts);
    this.servers = this.registry.servers;
    this.users = this.registry.users;
    this.content = new UpstreamContent(this.servers);
  }

  /** A server's configuration, configured or added at run time (the credential flows look perUser servers up here). */
  serverConfig(name: string): McpServerConfig | undefined {
    return this.registry.serverConfig(name);
  }

  /** Any upstream server configured or added: the entry points consult the gateway only then. */
  get active(): boolean {
    return this.registry.active;
  }

  /** Start shared connections and the sync of servers added at run time. */
  start(): void {
    this.registry.start();
  }

  close(): Promise<void> {
    return this.registry.close();
  }

  /**
   * Called when any server's tools, prompts or resources may have changed (list_changed, connect,
   * loss, add/remove), with the lists that did.
   */
  onChange(fn: (kinds: ReadonlySet<ListKind>) => void): () => void {
    return this.registry.onChange(fn);
  }

  /** gateway.addServer: a remote server, stored for every instance. Stdio never comes from an API (it would run a command). */
  addServer(name: string, config: McpServerConfig): Promise<void> {
    return this.registry.addServer(name, config);
  }

  removeServer(name: string): Promise<boolean> {
    return this.registry.removeServer(name);
  }

  /** Every server with its health (administrators: gateway.serverStatus, the console). */
  status(): Array<ServerStatus & AdminServerStatus> {
    return [...this.servers.values()].map((e) => adminStatus(e, this.users.countFor(e.name)));
  }

  /** How many of a server's tools tools/list shows this caller (toolsOf: exposed, and admitted by its key's rule). */
  private toolsShown(e: ServerEntry, identity: Identity | null): number {
    return e.shared ? upstreamTools(e, e.shared, identity).length : 0;
  }

  /** Every scope an enabled server's `allowScopes` names: an API key holding one needs its owner to hold it too (serverAllows). */
  allowScopes(): ReadonlySet<string> {
    const out = new Set<string>();
    for (const e of this.servers.values()) if (e.config.enabled) for (const s of e.config.allowScopes ?? []) out.add(s);
    return out;
  }

  /**
   * The servers this caller may use (gateway.listServers). Through an API key with a `tools`
   * rule, only those it reaches something of: as tools/list, prompts/list and resources/list show
   * a key nothing of a server its rule leaves out, the server list does not name it either.
   */
  listServers(identity: Identity | null): ServerStatus[] {
    return [...this.servers.values()]
      .filter((e) => serverAllows(e.config, identity) && this.keyReaches(identity, e))
      .map((e) => serverSummary(e, this.toolsShown(e, identity)));
  }

  /** Does the caller's API key `tools` rule admit anything of this server (the whole server, one of its tools or prompts)? */
  private keyReaches(identity: Identity | null, e: ServerEntry): boolean {
    const rule = identity?.apiKey?.tools;
    if (!rule || keyAllowsServer(identity, e.name)) return true;
    if (e.shared)
      return (
        upstreamTools(e, e.shared, identity).length > 0 ||
        [...exposedItems(e.name, e.shared.lists.prompts).keys()].some((name) => keyAllowsTool(identity, name))
      );
    // A perUser server lists per user (nothing shared to match): a rule that names its prefix.
    return rule.some((glob) => glob.startsWith(exposedName(e.name, '')));
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
    return this.users.get(entry.name, identity.sub, headers, () => this.registry.connection(entry.name, config, headers, 'onUse'));
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
      const tools = upstreamTools(entry, conn, identity);
      if (entry.config.expose === 'search') searchable ||= tools.length > 0;
      else out.push(...tools);
    }
    if (searchable) out.push(...searchToolDefinitions().filter((t) => keyAllowsTool(identity, t.name)));
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
      pool.push(...upstreamTools(entry, conn, identity));
    }
    return searchTools(pool, query, limit);
  }

  /** Is `name` an upstream tool (or search_tools / call_tool) this caller may call? Anything else is answered like an unknown tool. */
  resolveTool(identity: Identity | null, name: string): { server: ServerEntry; tool: string } | 'search' | undefined {
    const target = this.toolTarget(identity, name);
    return target instanceof CoreError ? undefined : target;
  }

  /**
   * The refusal of the caller's API key when `name` is an upstream tool the caller could call but
   * for its key's `tools` rule (keyToolRefusal), for the security log; the caller is answered as
   * for an unknown tool all the same.
   */
  toolRefusal(identity: Identity | null, name: string): CoreError | undefined {
    const target = this.toolTarget(identity, name);
    return target instanceof CoreError ? target : undefined;
  }

  /** resolveTool, with a tool the caller's key refuses told apart from an unknown one (its refusal). */
  private toolTarget(identity: Identity | null, name: string): { server: ServerEntry; tool: string } | 'search' | CoreError | undefined {
    const keyRule = (exposed: string, target: { server: ServerEntry; tool: string } | 'search') =>
      keyAllowsTool(identity, exposed) ? target : keyToolRefusal(exposed);
    if (SEARCH_TOOLS.has(name))
      return [...this.servers.values()].some((e) => e.config.expose === 'search' && serverAllows(e.config, identity))
        ? keyRule(name, 'search')
        : undefined;
    const parts = splitExposedName(name);
    const entry = parts && this.servers.get(parts.server);
    if (!parts || !entry || !serverAllows(entry.config, identity)) return undefined;
    // The shared connection's list names the tool; one not listed yet (a perUser server, a shared one still connecting) is
    // asked after it opens (callOn).
    const found = entry.shared ? upstreamToolOn(entry, entry.shared, name) : undefined;
    if (found) return keyRule(found.exposed, { server: entry, tool: found.tool });
    if (entry.shared?.state.kind === 'ready') return undefined;
    // Its own name, or a shortened one (exposedMcpName) whose tool only its list can tell: checked again there.
    const plain = exposedName(entry.name, parts.name) === exposedMcpName(entry.name, parts.name);
    if (plain && !serverExposesTool(entry.config, parts.name)) return undefined;
    return keyRule(name, { server: entry, tool: parts.name });
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
    const target = this.toolTarget(call.identity, name);
    if (target === 'search') return this.callSearchTool(call, name, args);
    if (!target || target instanceof CoreError) throw unknownTool(name, target);
    const { server } = target;
    const conn = await this.connectionFor(server, call.identity);
    // Kept for the whole call: new credentials meanwhile (a refreshed token) retire it only after.
    const release = conn.acquire();
    try {
      return await callOnConnection(this.opts, conn, call, server, name, args);
    } finally {
      release();
    }
  }

  private async callSearchTool(call: GatewayCall, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    if (name === 'search_tools') {
      const query = typeof args.query === 'string' ? args.query : '';
      const limit = typeof args.limit === 'number' && args.limit > 0 ? Math.min(Math.floor(args.limit), 50) : 10;
      const found = await this.search(call.identity, query, limit);
      const tools = found.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }));
      return { content: [{ type: 'text', text: JSON.stringify({ tools }) }], structuredContent: { tools } };
    }
    const target = typeof args.name === 'string' ? this.toolTarget(call.identity, args.name) : undefined;
    // call_tool reaches only the tools search_tools can find: those of 'search' servers.
    if (!target || target instanceof CoreError || target === 'search' || target.server.config.expose !== 'search') {
      const name = typeof args.name === 'string' ? args.name : '';
      // A refusal of the key counts only for a tool call_tool could otherwise reach (on a 'search' server).
      const onSearch = this.servers.get(splitExposedName(name)?.server ?? '')?.config.expose === 'search';
      throw unknownTool(name, target instanceof CoreError && onSearch ? target : undefined);
    }
    const inner = args.arguments;
    return this.callTool(
      call,
      args.name as string,
      inner && typeof inner === 'object' && !Array.isArray(inner) ? (inner as Record<string, unknown>) : {},
    );
  }
}

export { UPSTREAM_NAME_META } from './exposedItems.js';
export { unknownTool } from './upstreamTools.js';
export type { GatewayCredentials } from './GatewayCredentials.js';
export type { AdminServerStatus, ServerStatus } from './ServerStatus.js';
export type { GatewayCall } from './callOnConnection.js';
