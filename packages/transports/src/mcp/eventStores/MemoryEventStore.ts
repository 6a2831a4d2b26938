import type { EventStore } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { formatEventId, isPriming, parseEventId } from './eventId.js';

export interface MemoryEventStoreOptions {
  /** Events kept per stream; older ones are dropped. Default 1000. */
  maxEventsPerStream?: number;
  /** Streams kept; the least recently written is dropped first. Default 200. */
  maxStreams?: number;
}

interface Stream {
  seq: number;
  events: Array<{ seq: number; message: JSONRPCMessage }>;
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

  constructor(opts: MemoryEventStoreOptions = {}) {
    this.maxEvents = opts.maxEventsPerStream ?? 1000;
    this.maxStreams = opts.maxStreams ?? 200;
  }

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    let stream = this.streams.get(streamId);
    if (stream) {
      this.streams.delete(streamId); // re-insert: Map order is our LRU order
    } else {
      stream = { seq: 0, events: [] };
      if (this.streams.size >= this.maxStreams) this.streams.delete(this.streams.keys().next().value!);
    }
    this.streams.set(streamId, stream);
    const seq = ++stream.seq;
    stream.events.push({ seq, message });
    if (stream.events.length > this.maxEvents) stream.events.splice(0, stream.events.length - this.maxEvents);
    return formatEventId(streamId, seq);
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

  /** Number of events held (for tests and metrics). */
  get size(): number {
    let n = 0;
    for (const s of this.streams.values()) n += s.events.length;
    return n;
  }
}
