import type { EventStore } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { formatEventId, isPriming, parseEventId } from './eventId.js';

export interface MemoryEventStoreOptions {
  /** Events kept per stream; older ones are dropped. Default 1000. */
  maxEventsPerStream?: number;
  /** Streams kept; the least recently written is dropped first. Default 200. */
  maxStreams?: number;
  /**
   * Approximate bytes kept (JSON size); the least recently written streams are dropped first,
   * but the newest event always stays. Default 2 MiB.
   */
  maxBytes?: number;
}

interface Stream {
  seq: number;
  bytes: number;
  events: Array<{ seq: number; message: JSONRPCMessage; bytes: number }>;
}

/**
 * Resumability for one session (one store per session, so it is freed with the session):
 * bounded per stream and in number of streams, so a chatty or abandoned session cannot grow
 * without limit. A client resuming from an event that was dropped gets 400 and starts over.
 */
export class MemoryEventStore implements EventStore {
  private readonly streams = new Map<string, Stream>();
  private readonly maxEvents: number;
  private readonly maxStreams: number;
  private readonly maxBytes: number;
  private bytes = 0;

  constructor(opts: MemoryEventStoreOptions = {}) {
    this.maxEvents = opts.maxEventsPerStream ?? 1000;
    this.maxStreams = opts.maxStreams ?? 200;
    this.maxBytes = opts.maxBytes ?? 2 * 1024 * 1024;
  }

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    let stream = this.streams.get(streamId);
    if (stream) {
      this.streams.delete(streamId); // re-insert: Map order is our LRU order
    } else {
      stream = { seq: 0, bytes: 0, events: [] };
      if (this.streams.size >= this.maxStreams) this.dropStream(this.streams.keys().next().value!);
    }
    this.streams.set(streamId, stream);
    const seq = ++stream.seq;
    const bytes = JSON.stringify(message).length;
    stream.events.push({ seq, message, bytes });
    stream.bytes += bytes;
    this.bytes += bytes;
    if (stream.events.length > this.maxEvents) this.dropOldest(stream, stream.events.length - this.maxEvents);
    // Over the byte budget: drop whole streams, least recently written first, then this
    // stream's oldest events; the event just stored always stays.
    for (const [id, s] of this.streams) {
      if (this.bytes <= this.maxBytes || s === stream) break;
      this.dropStream(id);
    }
    if (this.bytes > this.maxBytes) this.dropOldest(stream, stream.events.length - 1);
    return formatEventId(streamId, seq);
  }

  private dropStream(id: string): void {
    const s = this.streams.get(id);
    if (!s) return;
    this.bytes -= s.bytes;
    this.streams.delete(id);
  }

  private dropOldest(stream: Stream, count: number): void {
    for (const e of stream.events.splice(0, Math.max(0, count))) {
      stream.bytes -= e.bytes;
      this.bytes -= e.bytes;
    }
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    const parsed = parseEventId(eventId);
    if (!parsed) return undefined;
    const stream = this.streams.get(parsed.streamId);
    // Unknown, or so old that later events were already dropped: cannot resume exactly.
    if (!stream || parsed.seq > stream.seq || (stream.events[0] && stream.events[0].seq > parsed.seq + 1)) return undefined;
    return parsed.streamId;
  }

  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    const parsed = parseEventId(lastEventId);
    const stream = parsed && this.streams.get(parsed.streamId);
    if (!parsed || !stream) return '';
    for (const e of stream.events) {
      if (e.seq > parsed.seq && !isPriming(e.message)) await send(formatEventId(parsed.streamId, e.seq), e.message);
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
