import type { EventStore, JSONRPCMessage } from '@modelcontextprotocol/server';
import type { Storage } from '@ai-backend/core';
import { AgedMap } from '@ai-backend/core/internal';
import { formatEventId, isPriming, parseEventId } from './eventId.js';

export interface StorageEventStoreOptions {
  /** How long an event can be replayed, in ms. Default 10 minutes. */
  ttlMs?: number;
  /** Replay at most this many events per resume, and keep at most this many per stream. Default 200. */
  maxEventsPerStream?: number;
  /** A bigger event is sent but not stored. Default 256 KiB. */
  maxEventBytes?: number;
  /** Bytes stored per session; oldest events of the stream being written are deleted first. Default 1 MiB. */
  sessionBytes?: number;
  /** Bytes all sessions (every instance sharing the storage) may store per ttl window. Default 64 MiB. */
  totalBytes?: number;
}

/** Most deletions one store call makes to get back under the session budget. */
const MAX_EVICTIONS = 32;
/** Streams of one session whose oldest stored event this instance tracks. */
export const MAX_STREAMS_TRACKED = 1000;

/**
 * Resumability over core Storage (redis for several instances, file for restarts), for one
 * session: `mcp:ev:<session>:<stream>:seq` is the stream's counter (atomic increment) and each
 * event is `mcp:ev:<session>:<stream>:<seq>` with a TTL, so nothing needs sweeping.
 *
 * Budgets: an event above `maxEventBytes` is not stored; each stream keeps its last
 * `maxEventsPerStream` events; a session's bytes (`mcp:ev:<session>:bytes`, per ttl window) stay
 * under `sessionBytes` by deleting the oldest events first; and all sessions together store at
 * most `totalBytes` per ttl window (`mcp:ev:total:<window>`), beyond which events are sent
 * without being stored. The answer itself never waits on these limits.
 */
export class StorageEventStore implements EventStore {
  private readonly ttlMs: number;
  private readonly maxEvents: number;
  private readonly maxEventBytes: number;
  private readonly sessionBytes: number;
  private readonly totalBytes: number;
  private readonly prefix: string;
  /**
   * Oldest seq possibly still stored, per stream (this instance's view). Every POST of a session
   * opens a stream, so a plain map grew by one entry per request for as long as the session lived.
   * A stream not written for `ttlMs` has no event left (each lives `ttlMs`), so its entry goes; at
   * most MAX_STREAMS_TRACKED streams (a stream dropped early keeps its older events until their TTL,
   * within the byte budgets; without an entry the next write starts from its last maxEvents).
   */
  private readonly oldest: AgedMap<string, number>;

  constructor(
    private readonly storage: Storage,
    sessionId: string,
    opts: StorageEventStoreOptions = {},
  ) {
    this.ttlMs = opts.ttlMs ?? 10 * 60_000;
    this.maxEvents = opts.maxEventsPerStream ?? 200;
    this.maxEventBytes = opts.maxEventBytes ?? 256 * 1024;
    this.sessionBytes = opts.sessionBytes ?? 1024 * 1024;
    this.totalBytes = opts.totalBytes ?? 64 * 1024 * 1024;
    this.prefix = `mcp:ev:${sessionId}:`;
    this.oldest = new AgedMap(this.ttlMs, MAX_STREAMS_TRACKED);
  }

  /** Streams tracked (tests). */
  get streamsTracked(): number {
    return this.oldest.size;
  }

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const base = this.prefix + streamId;
    // The counter outlives its events so sequence numbers never restart within a session.
    const seq = (await this.storage.increment(`${base}:seq`, 1, { ttlMs: Math.max(this.ttlMs, 24 * 3600_000) }))!;
    const id = formatEventId(streamId, seq);
    const bytes = JSON.stringify(message).length;
    if (bytes > this.maxEventBytes) return id;
    const window = Math.floor(Date.now() / this.ttlMs);
    const total = await this.storage.increment(`mcp:ev:total:${window}`, bytes, { ttlMs: this.ttlMs });
    if ((total ?? 0) > this.totalBytes) return id;
    await this.storage.set(`${base}:${seq}`, message, { ttlMs: this.ttlMs });
    let used = (await this.storage.increment(`${this.prefix}bytes`, bytes, { ttlMs: this.ttlMs })) ?? 0;
    const now = Date.now();
    const known = this.oldest.get(streamId, now);
    let oldest = Math.max(known ?? 1, seq - this.maxEvents + 1);
    // Count bound: what fell out of the last maxEvents is deleted (oldest first).
    for (let s = known ?? Math.max(1, seq - this.maxEvents); s < oldest && s > 0; s++) used = await this.evict(base, s, used);
    // Byte bound: delete this stream's oldest events until the session fits (the newest included, if it must).
    for (let n = 0; used > this.sessionBytes && oldest <= seq && n < MAX_EVICTIONS; n++) used = await this.evict(base, oldest++, used);
    this.oldest.set(streamId, oldest, now);
    return id;
  }

  /** Delete one stored event and take its bytes off the session's count. */
  private async evict(base: string, seq: number, used: number): Promise<number> {
    const key = `${base}:${seq}`;
    const message = await this.storage.get<JSONRPCMessage>(key);
    if (message === undefined) return used;
    await this.storage.delete(key);
    const size = JSON.stringify(message).length;
    return (await this.storage.increment(`${this.prefix}bytes`, -size, { ttlMs: this.ttlMs })) ?? used - size;
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    const parsed = parseEventId(eventId);
    if (!parsed) return undefined;
    const last = await this.storage.get<number>(`${this.prefix}${parsed.streamId}:seq`);
    return last !== undefined && parsed.seq <= last ? parsed.streamId : undefined;
  }

  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> },
  ): Promise<string> {
    const parsed = parseEventId(lastEventId);
    if (!parsed) return '';
    const base = this.prefix + parsed.streamId;
    const last = (await this.storage.get<number>(`${base}:seq`)) ?? 0;
    const from = Math.max(parsed.seq + 1, last - this.maxEvents + 1);
    for (let seq = from; seq <= last; seq++) {
      const message = await this.storage.get<JSONRPCMessage>(`${base}:${seq}`);
      if (message !== undefined && !isPriming(message)) await send(formatEventId(parsed.streamId, seq), message);
    }
    return parsed.streamId;
  }
}
