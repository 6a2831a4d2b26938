import type { EventStore } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Storage } from '@ai-backend/core';
import { formatEventId, isPriming, parseEventId } from './eventId.js';

export interface StorageEventStoreOptions {
  /** How long an event can be replayed, in ms. Default 10 minutes. */
  ttlMs?: number;
  /** Replay at most this many events per resume. Default 1000. */
  maxReplay?: number;
}

/**
 * Resumability over core Storage (redis for several instances, file for restarts), for one
 * session: `mcp:ev:<session>:<stream>:seq` is the stream's counter (atomic increment) and each
 * event is `mcp:ev:<session>:<stream>:<seq>` with a TTL, so nothing needs sweeping.
 */
export class StorageEventStore implements EventStore {
  private readonly ttlMs: number;
  private readonly maxReplay: number;
  private readonly prefix: string;

  constructor(
    private readonly storage: Storage,
    sessionId: string,
    opts: StorageEventStoreOptions = {},
  ) {
    this.ttlMs = opts.ttlMs ?? 10 * 60_000;
    this.maxReplay = opts.maxReplay ?? 1000;
    this.prefix = `mcp:ev:${sessionId}:`;
  }

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const base = this.prefix + streamId;
    // The counter outlives its events so sequence numbers never restart within a session.
    const seq = (await this.storage.increment(`${base}:seq`, 1, { ttlMs: Math.max(this.ttlMs, 24 * 3600_000) }))!;
    await this.storage.set(`${base}:${seq}`, message, { ttlMs: this.ttlMs });
    return formatEventId(streamId, seq);
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    const parsed = parseEventId(eventId);
    if (!parsed) return undefined;
    const last = await this.storage.get<number>(`${this.prefix}${parsed.streamId}:seq`);
    return last !== undefined && parsed.seq <= last ? parsed.streamId : undefined;
  }

  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    const parsed = parseEventId(lastEventId);
    if (!parsed) return '';
    const base = this.prefix + parsed.streamId;
    const last = (await this.storage.get<number>(`${base}:seq`)) ?? 0;
    const from = Math.max(parsed.seq + 1, last - this.maxReplay + 1);
    for (let seq = from; seq <= last; seq++) {
      const message = await this.storage.get<JSONRPCMessage>(`${base}:${seq}`);
      if (message !== undefined && !isPriming(message)) await send(formatEventId(parsed.streamId, seq), message);
    }
    return parsed.streamId;
  }
}
