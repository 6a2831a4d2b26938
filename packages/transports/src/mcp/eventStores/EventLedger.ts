/** What the ledger asks of a store: drop one event if it still holds it. */
export interface EvictableStore {
  /** Remove the event (its bytes are then released through the ledger); false when already gone. */
  evict(streamId: string, seq: number): boolean;
  has(streamId: string, seq: number): boolean;
}

interface Entry {
  store: EvictableStore;
  streamId: string;
  seq: number;
  /** When it was stored (ms since epoch). */
  at: number;
}

/**
 * The process-wide byte budget of the in-memory event stores (`mcp.budgets.eventStore.totalBytes`):
 * every stored event is entered in arrival order; over the budget the oldest events of any session
 * are evicted first. Stores release bytes themselves when they drop events (their own per-session
 * limits, expiry, session end), so `bytes` is always what is really held.
 */
export class EventLedger {
  private queue: Entry[] = [];
  private head = 0;
  private held = 0;
  private events = 0;

  constructor(readonly maxBytes: number) {}

  get bytes(): number {
    return this.held;
  }

  get count(): number {
    return this.events;
  }

  /** Account one stored event, then evict oldest-first until the total fits again. */
  add(store: EvictableStore, streamId: string, seq: number, bytes: number, at = Date.now()): void {
    this.queue.push({ store, streamId, seq, at });
    this.held += bytes;
    this.events++;
    while (this.held > this.maxBytes && this.head < this.queue.length) {
      const e = this.queue[this.head++]!;
      e.store.evict(e.streamId, e.seq);
    }
    this.compact();
  }

  /**
   * Drop every event stored before `before`, whichever session holds it. Stores only expire
   * their own events when they are written or read again, so without this a session nobody
   * comes back to would keep its last answers until it is closed.
   */
  expire(before: number): void {
    while (this.head < this.queue.length && this.queue[this.head]!.at < before) {
      const e = this.queue[this.head++]!;
      e.store.evict(e.streamId, e.seq);
    }
    this.compact();
  }

  release(bytes: number, events = 1): void {
    this.held -= bytes;
    this.events -= events;
  }

  /** Entries of events dropped by their stores pile up at the front; drop them now and then. */
  private compact(): void {
    const entries = this.queue.length - this.head;
    if (this.head > 1024 && this.head > entries) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    if (this.queue.length > 4 * this.events + 1024) {
      this.queue = this.queue.slice(this.head).filter((e) => e.store.has(e.streamId, e.seq));
      this.head = 0;
    }
  }
}
