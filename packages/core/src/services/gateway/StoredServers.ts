import type { Logger } from '../../kernel/Logger.js';
import type { Storage } from '../../kernel/Storage.js';
import type { Signals } from '../../kernel/Signals.js';
import type { McpServerConfig } from '../../config/sections/mcpServers.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { Sealed } from '../vault/vaultCrypto.js';

const KEY = 'gateway:servers';
const TOPIC = 'gateway.servers';

/** The key vault's sealing of one value (CredentialStore's): AES-256-GCM under the vault's master secret, bound to a slot. */
export interface ValueSealer {
  readonly configured: boolean;
  sealValue(value: unknown, binding: string): Sealed;
  openValue<T>(sealed: Sealed, binding: string): T | undefined;
}

/** A server's credentials, kept apart from the rest of its stored config. */
interface ServerSecrets {
  headers: Record<string, string>;
  clientSecret?: string | undefined;
}

/** A stored server: its config without credentials, and the credentials sealed (absent in records written before sealing). */
type StoredServer = McpServerConfig & { sealed?: Sealed };

interface Record_ {
  /** Bumped by every change, so an instance applies a change once. */
  version: string;
  servers: Record<string, StoredServer>;
}

const binding = (name: string) => `gateway-server:v1:${name}`;

/** A stored server whose credentials are still in clear: a record written before sealing. */
function inClear(stored: StoredServer): boolean {
  if (stored.type === 'stdio' || stored.sealed) return false;
  return Object.keys(stored.headers ?? {}).length > 0 || stored.oauth?.clientSecret !== undefined;
}

/**
 * Remote servers added at run time (gateway.addServer), kept in the store every instance shares
 * and applied everywhere: a change is announced on the cross-instance signals (Redis pub/sub), and
 * where those reach only this process while the store is shared (PostgreSQL without Redis) each
 * instance also reads the record every `pollMs` (gateway.syncIntervalMs, default 1 s). A
 * compare-and-set write keeps two administrators' concurrent changes from losing one another.
 */
export class StoredServers {
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private version: string | undefined;
  /**
   * Syncs started and the newest one whose read was applied. Syncs overlap (the poll, a signal, a
   * change's own): one whose read began before a newer one's must not apply after it, or a
   * server removed meanwhile would be served again here (and one added would vanish) until the
   * next change. A later-started read sees at least every change made before it began.
   */
  private syncsStarted = 0;
  private appliedSync = 0;
  private lastWarning = 0;
  /** Servers whose credentials stay in clear for want of a vault key, already warned about. */
  private readonly warnedClear = new Set<string>();

  constructor(
    private readonly storage: Storage,
    private readonly signals: Signals,
    private readonly pollMs: number | undefined,
    private readonly apply: (servers: ReadonlyMap<string, McpServerConfig>) => void,
    private readonly logger: Logger,
    /** Seals the servers' credentials (headers, oauth.clientSecret) at rest; without one, a server with credentials is refused. */
    private readonly sealer?: ValueSealer,
  ) {}

  start(): void {
    if (this.unsubscribe) return;
    this.unsubscribe = this.signals.subscribe(TOPIC, () => void this.sync());
    void this.sync();
    if (this.pollMs === undefined) return;
    this.timer = setInterval(() => void this.sync(), this.pollMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  async sync(): Promise<void> {
    const ticket = ++this.syncsStarted;
    try {
      const record = await this.storage.get<Record_>(KEY);
      if (ticket < this.appliedSync || record?.version === this.version) return;
      this.appliedSync = ticket;
      this.version = record?.version;
      const servers = new Map<string, McpServerConfig>();
      for (const [name, stored] of Object.entries(record?.servers ?? {})) {
        const config = this.unsealed(name, stored);
        if (config) servers.set(name, config);
      }
      this.apply(servers);
      if (Object.values(record?.servers ?? {}).some(inClear)) await this.resealOrRetry();
    } catch (err) {
      if (Date.now() - this.lastWarning < 60_000) return;
      this.lastWarning = Date.now();
      this.logger.warn('MCP gateway: servers added at run time could not be read', {
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }

  private async change(fn: (servers: Record<string, McpServerConfig>) => boolean): Promise<boolean> {
    for (let attempt = 0; attempt < 10; attempt++) {
      const current = await this.storage.get<Record_>(KEY);
      const servers = { ...(current?.servers ?? {}) };
      if (!fn(servers)) return false;
      const next: Record_ = { version: `${Date.now()}-${Math.random().toString(36).slice(2)}`, servers };
      if (await this.storage.compareAndSet(KEY, current, next)) {
        await this.sync();
        await this.signals.publish(TOPIC, next.version).catch(() => undefined);
        return true;
      }
    }
    throw new Error('the MCP server list changed concurrently too often; try again');
  }

  /**
   * reseal, whose failure (the store down a moment) is its own: the servers were read and applied,
   * so it is logged as what it is, and the next sync tries again (the record's version is forgotten).
   */
  private async resealOrRetry(): Promise<void> {
    try {
      await this.reseal();
    } catch (err) {
      this.version = undefined;
      if (Date.now() - this.lastWarning < 60_000) return;
      this.lastWarning = Date.now();
      this.logger.warn('MCP gateway: credentials stored in clear could not be sealed yet; trying again at the next sync', {
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }

  /**
   * Seal the credentials of records written before sealing, in place: every instance that reads
   * such a record (at start, or when an older instance writes one) rewrites it with compare-and-set,
   * so of two doing so at once one writes and the other, reading again, finds nothing left in
   * clear. The servers stay as they were (same config once unsealed). Without a vault key they
   * stay in clear, and the log says so once per server (its name, never its credentials).
   */
  private async reseal(): Promise<void> {
    if (!this.sealer?.configured) {
      const record = await this.storage.get<Record_>(KEY);
      for (const [name, stored] of Object.entries(record?.servers ?? {})) {
        if (!inClear(stored) || this.warnedClear.has(name)) continue;
        this.warnedClear.add(name);
        this.logger.warn(
          'MCP gateway: a server added at run time has its credentials stored in clear (written before sealing); set billing.vaultKey or oauth.encryptionKey to seal them',
          { server: name },
        );
      }
      return;
    }
    const names: string[] = [];
    await this.change((servers) => {
      names.length = 0;
      for (const [name, stored] of Object.entries(servers as Record<string, StoredServer>)) {
        if (!inClear(stored)) continue;
        servers[name] = this.sealed(name, stored);
        names.push(name);
      }
      return names.length > 0;
    });
    if (names.length > 0) this.logger.info('MCP gateway: sealed the credentials of servers stored in clear', { servers: names });
  }

  async put(name: string, config: McpServerConfig): Promise<boolean> {
    const stored = this.sealed(name, config);
    return this.change((servers) => {
      servers[name] = stored;
      return true;
    });
  }

  /**
   * The record of a server with its credentials sealed by the key vault, as per-user credentials
   * and BYOK keys are: the store (and its backups) never holds an added server's headers or OAuth
   * client secret in clear. Without the vault's master secret such a server is refused.
   */
  private sealed(name: string, config: McpServerConfig): StoredServer {
    if (config.type === 'stdio') return config;
    const clientSecret = config.oauth?.clientSecret;
    if (Object.keys(config.headers).length === 0 && clientSecret === undefined) return config;
    if (!this.sealer?.configured)
      throw new CoreError(
        'NOT_CONFIGURED',
        `MCP server "${name}" carries credentials (headers or oauth.clientSecret), which are stored encrypted: set billing.vaultKey or oauth.encryptionKey`,
      );
    const secrets: ServerSecrets = { headers: config.headers, ...(clientSecret !== undefined ? { clientSecret } : {}) };
    const { clientSecret: _, ...oauth } = config.oauth ?? {};
    return {
      ...config,
      headers: {},
      ...(config.oauth ? { oauth } : {}),
      sealed: this.sealer.sealValue(secrets, binding(name)),
    };
  }

  /** A stored server as the gateway runs it: its sealed credentials put back; undefined (and a warning) when they cannot be opened. */
  private unsealed(name: string, stored: StoredServer): McpServerConfig | undefined {
    const { sealed, ...config } = stored;
    if (!sealed || config.type === 'stdio') return config as McpServerConfig;
    const secrets = this.sealer?.openValue<ServerSecrets>(sealed, binding(name));
    if (!secrets) {
      this.logger.warn(
        'MCP gateway: the credentials of a server added at run time cannot be decrypted (its vault key is not configured); it is not served',
        {
          server: name,
        },
      );
      return undefined;
    }
    return {
      ...config,
      headers: secrets.headers,
      ...(secrets.clientSecret !== undefined ? { oauth: { ...config.oauth, clientSecret: secrets.clientSecret } } : {}),
    } as McpServerConfig;
  }

  remove(name: string): Promise<boolean> {
    return this.change((servers) => {
      if (!Object.hasOwn(servers, name)) return false;
      delete servers[name];
      return true;
    });
  }
}
