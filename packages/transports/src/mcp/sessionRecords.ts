import type { Storage } from '@ai-backend/core';

/** What another instance needs to take over a session: who owns it and how it was initialized. */
export interface SessionRecord {
  owner: string | null;
  /** The API key the session was opened with (its id), if any: only that key may use it. */
  key?: string;
  /** The client's initialize params (protocolVersion, capabilities, clientInfo). */
  init: Record<string, unknown>;
}

const KEY = 'mcp:session:';

/**
 * Sessions shared across instances through core Storage (redis): a request for a session this
 * process does not hold is served by recreating it from its record, so a load balancer may send
 * any request to any instance. Records expire after the idle time; activity refreshes them at
 * most once a minute per session to keep writes low.
 */
export class SessionRecords {
  private readonly touched = new Map<string, number>();
  /**
   * Per session, the record writes still running (save, touch): a remove waits for them before it
   * deletes, or a write that lands after the delete would bring the record of a closed session
   * back, and another instance would take the session over from it until the record expires.
   */
  private readonly writes = new Map<string, Promise<unknown>>();

  constructor(
    private readonly storage: Storage,
    private readonly ttlMs: number,
  ) {}

  async save(id: string, record: SessionRecord): Promise<void> {
    // Marked before the write: a DELETE that comes while it runs (remove) then finds the mark and
    // takes it, where a mark set after the write would stay for the life of the process.
    this.touched.set(id, Date.now());
    try {
      await this.write(id, record);
    } catch (err) {
      this.touched.delete(id);
      throw err;
    }
  }

  /** Sessions whose record this process keeps alive (tests). */
  get size(): number {
    return this.touched.size;
  }

  async load(id: string): Promise<SessionRecord | undefined> {
    // Session ids are UUIDs; anything else cannot be ours and is not looked up.
    if (!/^[0-9a-f-]{36}$/i.test(id)) return undefined;
    return this.storage.get<SessionRecord>(KEY + id);
  }

  /** Keep the record alive while the session is used (throttled). */
  touch(id: string, record: () => SessionRecord): void {
    const last = this.touched.get(id) ?? 0;
    if (Date.now() - last < 60_000) return;
    this.touched.set(id, Date.now());
    void this.write(id, record()).catch(() => undefined);
  }

  async remove(id: string): Promise<void> {
    this.touched.delete(id);
    await this.writes.get(id);
    await this.storage.delete(KEY + id).catch(() => false);
  }

  /** Writes the record, tracked until it lands or fails (remove waits for it). */
  private write(id: string, record: SessionRecord): Promise<void> {
    const written = this.storage.set(KEY + id, record, { ttlMs: this.ttlMs });
    const all = Promise.allSettled([this.writes.get(id), written]);
    this.writes.set(id, all);
    void all.then(() => {
      if (this.writes.get(id) === all) this.writes.delete(id);
    });
    return written;
  }

  /** This process no longer holds the session (the record stays for other instances). */
  forget(id: string): void {
    this.touched.delete(id);
  }
}
