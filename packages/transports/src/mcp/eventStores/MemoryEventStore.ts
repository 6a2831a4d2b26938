import type { EventStore, JSONRPCMessage } from '@modelcontextprotocol/server';
import { formatEventId, isPriming, parseEventId } from './eventId.js';
import { EventLedger, type EvictableStore } from './EventLedger.js';

export interface MemoryEventStoreOptions {
  /** Events kept per stream; older ones are dropped. Default 200. */
  maxEventsPerStream?: number;
  /** Streams kept; the least recently written is dropped first. Default 200. */
  maxStreams?: number;
  /** Approximate bytes kept by this session (JSON size); oldest events dropped first. Default 1 MiB. */
  maxBytes?: number;
  /** A bigger event is sent but not kept (it cannot be replayed). Default 256 KiB. */
  maxEventBytes?: number;
  /** How long an event stays replayable, in ms. Default 10 minutes. */
  ttlMs?: number;
  /** The process-wide budget shared by every session's store. Default: a private 64 MiB one. */
  ledger?: EventLedger;
  /** Clock, for tests. */
  now?: () => number;
}

interface Stream {
  /** The stream id as one flat string (see storeEvent). */
  id: string;
  seq: number;
  /**
   * The message object itself, not its JSON text: lists are shared objects (the tool catalog's
   * tools/list answer is ~20 KB of JSON but one object every session's answer points to).
   */
  events: Array<{ seq: number; message: JSONRPCMessage; bytes: number; at: number }>;
}

/**
 * Resumability for one session (one store per session, freed with the session). Bounded per
 * stream (count), per session (bytes), per event (bytes), in time (ttl) and, through the shared
 * ledger, across all sessions (bytes, oldest first). A client resuming from an event that was
 * dropped gets 400 and starts over; the answer itself is never held back by these limits.
 */
export class MemoryEventStore implements EventStore, EvictableStore {
  private readonly streams = new Map<string, Stream>();
  private readonly maxEvents: number;
  private readonly maxStreams: number;
  private readonly maxBytes: number;
  private readonly maxEventBytes: number;
  private readonly ttlMs: number;
  private readonly ledger: EventLedger;
  private readonly now: () => number;
  private bytes = 0;
  private disposed = false;

  constructor(opts: MemoryEventStoreOptions = {}) {
    this.maxEvents = opts.maxEventsPerStream ?? 200;
    this.maxStreams = opts.maxStreams ?? 200;
    this.maxBytes = opts.maxBytes ?? 1024 * 1024;
    this.maxEventBytes = opts.maxEventBytes ?? 256 * 1024;
    this.ttlMs = opts.ttlMs ?? 10 * 60_000;
    this.ledger = opts.ledger ?? new EventLedger(64 * 1024 * 1024);
    this.now = opts.now ?? Date.now;
  }

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    return this.storeEventNow(streamId, message);
  }

  /** storeEvent's work, done before it returns: the store answers at once (see failSafeEventStore). */
  storeEventNow(streamId: string, message: JSONRPCMessage): string {
    let stream = this.streams.get(streamId);
    if (stream) {
      this.streams.delete(streamId); // re-insert: Map order is our LRU order
    } else {
      // The SDK's stream ids are rope strings (about 1 KB of string pieces each); a copy that is
      // one flat string is what the map and the ledger keep for the stream's lifetime.
      stream = { id: flatten(streamId), seq: 0, events: [] };
      if (this.streams.size >= this.maxStreams) this.dropStream(this.streams.keys().next().value!);
    }
    this.streams.set(stream.id, stream);
    const seq = ++stream.seq;
    // The priming event of a stream is never replayed: its id is all a client resumes from.
    if (isPriming(message)) return formatEventId(streamId, seq);
    const bytes = JSON.stringify(message).length;
    // Sent, but too big to keep: the id is valid, a resume from before it just cannot be exact.
    if (this.disposed || bytes > this.maxEventBytes) return formatEventId(streamId, seq);
    const now = this.now();
    this.expire(stream, now);
    stream.events.push({ seq, message, bytes, at: now });
    this.bytes += bytes;
    if (stream.events.length > this.maxEvents) this.dropOldest(stream, stream.events.length - this.maxEvents);
    // Over the session's budget: oldest events first, across its streams (least recently written first).
    for (const [id, s] of this.streams) {
      if (this.bytes <= this.maxBytes) break;
      if (s === stream) continue;
      this.dropStream(id);
    }
    if (this.bytes > this.maxBytes) this.dropOldest(stream, stream.events.length - 1);
    if (this.bytes > this.maxBytes) this.dropOldest(stream, 1);
    if (stream.events.at(-1)?.seq === seq) this.ledger.add(this, stream.id, seq, bytes, now);
    return formatEventId(streamId, seq);
  }

  has(streamId: string, seq: number): boolean {
    return this.streams.get(streamId)?.events.some((e) => e.seq === seq) ?? false;
  }

  evict(streamId: string, seq: number): boolean {
    const stream = this.streams.get(streamId);
    const i = stream ? stream.events.findIndex((e) => e.seq === seq) : -1;
    if (!stream || i < 0) return false;
    // Events are in seq order: everything before it is older still and goes too.
    this.dropOldest(stream, i + 1);
    return true;
  }

  /** The session ended: give every byte back to the shared budget. */
  dispose(): void {
    this.disposed = true;
    for (const id of [...this.streams.keys()]) this.dropStream(id);
  }

  private expire(stream: Stream, now: number): void {
    let n = 0;
    while (n < stream.events.length && now - stream.events[n]!.at > this.ttlMs) n++;
    if (n) this.dropOldest(stream, n);
  }

  private dropStream(id: string): void {
    const s = this.streams.get(id);
    if (!s) return;
    this.dropOldest(s, s.events.length);
    this.streams.delete(id);
  }

  private dropOldest(stream: Stream, count: number): void {
    const gone = stream.events.splice(0, Math.max(0, count));
    if (gone.length === 0) return;
    let bytes = 0;
    for (const e of gone) bytes += e.bytes;
    this.bytes -= bytes;
    this.ledger.release(bytes, gone.length);
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    const parsed = parseEventId(eventId);
    if (!parsed) return undefined;
    const stream = this.streams.get(parsed.streamId);
    if (stream) this.expire(stream, this.now());
    // Unknown, or so old that later events were already dropped: cannot resume exactly.
    if (!stream || parsed.seq > stream.seq) return undefined;
    const first = stream.events[0]?.seq ?? stream.seq + 1;
    if (first > parsed.seq + 1) return undefined;
    return parsed.streamId;
  }

  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> },
  ): Promise<string> {
    const parsed = parseEventId(lastEventId);
    const stream = parsed && this.streams.get(parsed.streamId);
    if (!parsed || !stream) return '';
    for (const e of stream.events) {
      if (e.seq > parsed.seq) await send(formatEventId(parsed.streamId, e.seq), e.message);
    }
    return parsed.streamId;
  }

  /** Approximate bytes held. */
  get byteSize(): number {
    return this.bytes;
  }

  /** Number of events held (for tests and metrics). */
  get size(): number {
    let n = 0;
    for (const s of this.streams.values()) n += s.events.length;
    return n;
  }
}

/** A copy of `s` as one sequential string (V8 keeps a concatenation as a tree of its pieces). */
function flatten(s: string): string {
  return JSON.parse(JSON.stringify(s)) as string;
}
