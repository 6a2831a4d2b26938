import { CoreError } from '../../kernel/CoreError.js';
import type { Logger } from '../../kernel/Logger.js';
import type { Storage } from '../../kernel/Storage.js';
import type { Signals } from '../../kernel/Signals.js';
import type { ResolvedConfig } from '../../config/schema.js';
import type { McpServerConfig } from '../../config/sections/mcpServers.js';
import { UpstreamConnection, type ListKind } from './UpstreamConnection.js';
import { UserConnections } from './UserConnections.js';
import { StoredServers, type ValueSealer } from './StoredServers.js';
import type { ServerEntry } from './UpstreamContent.js';
import { guardedUpstream, upstreamUrlProblem, type UpstreamHttp } from './guardUpstream.js';

export interface GatewayServersOptions {
  config: ResolvedConfig;
  logger: Logger;
  /** Where servers added at run time live (every instance reads them). */
  storage: Storage;
  /** Announces servers added or removed to the other instances. */
  signals: Signals;
  /** Read the stored servers this often as well (a shared store without shared signals); undefined: signals only. */
  pollMs?: number;
  /** Seals the credentials of servers added at run time (the key vault's; CredentialStore). */
  sealer?: ValueSealer;
}

/**
 * The gateway's upstream servers: those of `mcpServers` and those added at run time (stored for
 * every instance, kept in sync), with their shared connections and users' own, and the changes of
 * what they offer, announced to listeners.
 */
export class GatewayServers {
  readonly servers = new Map<string, ServerEntry>();
  /** The per-user connections of perUser servers. */
  readonly users: UserConnections;
  private readonly stored: StoredServers;
  private readonly listeners = new Set<(kinds: ReadonlySet<ListKind>) => void>();
  private readonly guarded: UpstreamHttp | undefined;

  constructor(private readonly opts: GatewayServersOptions) {
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

  /** A new connection to a server: shared ones reconnect by themselves ('eager'), per-user ones on their next use. */
  connection(name: string, server: McpServerConfig, headers: Record<string, string>, reconnect: 'eager' | 'onUse'): UpstreamConnection {
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
}
