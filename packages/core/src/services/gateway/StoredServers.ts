import type { Logger } from '../../kernel/Logger.js';
import type { Storage } from '../../kernel/Storage.js';
import type { Signals } from '../../kernel/Signals.js';
import type { McpServerConfig } from '../../config/sections/mcpServers.js';

const KEY = 'gateway:servers';
const TOPIC = 'gateway.servers';

interface Record_ {
  /** Bumped by every change, so an instance applies a change once. */
  version: string;
  servers: Record<string, McpServerConfig>;
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
  private lastWarning = 0;

  constructor(
    private readonly storage: Storage,
    private readonly signals: Signals,
    private readonly pollMs: number | undefined,
    private readonly apply: (servers: ReadonlyMap<string, McpServerConfig>) => void,
    private readonly logger: Logger,
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
    try {
      const record = await this.storage.get<Record_>(KEY);
      if (record?.version === this.version) return;
      this.version = record?.version;
      this.apply(new Map(Object.entries(record?.servers ?? {})));
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

  put(name: string, config: McpServerConfig): Promise<boolean> {
    return this.change((servers) => {
      servers[name] = config;
      return true;
    });
  }

  remove(name: string): Promise<boolean> {
    return this.change((servers) => {
      if (!Object.hasOwn(servers, name)) return false;
      delete servers[name];
      return true;
    });
  }
}
