import { createHash } from 'node:crypto';
import type { UpstreamConnection } from './UpstreamConnection.js';

interface Held {
  conn: UpstreamConnection;
  /** A digest of the credentials it was opened with: new credentials open a new connection. */
  fingerprint: string;
}

/**
 * The per-user connections of `perUser` servers, keyed by (server, user) and bounded: at most
 * `max` open (the least recently used is closed to make room) and each closed after `idleMs`
 * unused (gateway.maxUserConnections, gateway.userConnectionIdleMs). A closed one is simply
 * opened again on the user's next call.
 */
export class UserConnections {
  /** Least recently used first. */
  private readonly held = new Map<string, Held>();
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly max: number,
    private readonly idleMs: number,
  ) {}

  get(server: string, user: string, headers: Record<string, string>, open: () => UpstreamConnection): UpstreamConnection {
    const key = `${server}\u0000${user}`;
    const fingerprint = createHash('sha256').update(JSON.stringify(headers)).digest('base64url');
    const found = this.held.get(key);
    this.held.delete(key);
    if (found && found.fingerprint === fingerprint) {
      this.held.set(key, found);
      return found.conn;
    }
    // Replaced (new credentials): the calls still running on the old one finish there.
    void found?.conn.retire();
    const conn = open();
    this.held.set(key, { conn, fingerprint });
    while (this.held.size > this.max) {
      const [oldest, h] = this.held.entries().next().value as [string, Held];
      this.held.delete(oldest);
      void h.conn.retire();
    }
    this.sweep();
    return conn;
  }

  private sweep(): void {
    if (this.sweeper) return;
    this.sweeper = setInterval(
      () => {
        const cutoff = Date.now() - this.idleMs;
        for (const [key, h] of this.held) {
          if (h.conn.lastUsed >= cutoff) continue;
          this.held.delete(key);
          void h.conn.retire();
        }
        if (this.held.size === 0) {
          clearInterval(this.sweeper);
          this.sweeper = undefined;
        }
      },
      Math.min(this.idleMs, 60_000),
    );
    this.sweeper.unref();
  }

  countFor(server: string): number {
    let n = 0;
    for (const key of this.held.keys()) if (key.startsWith(`${server}\u0000`)) n++;
    return n;
  }

  async closeServer(server: string): Promise<void> {
    const closing: Array<Promise<void>> = [];
    for (const [key, h] of this.held) {
      if (!key.startsWith(`${server}\u0000`)) continue;
      this.held.delete(key);
      closing.push(h.conn.close());
    }
    await Promise.all(closing);
  }

  async closeAll(): Promise<void> {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
    const all = [...this.held.values()];
    this.held.clear();
    await Promise.all(all.map((h) => h.conn.close()));
  }
}
