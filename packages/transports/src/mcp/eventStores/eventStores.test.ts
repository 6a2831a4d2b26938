import { randomUUID } from 'node:crypto';
import type { EventStore } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { createStorage, MemoryStorage, resolveConfig, type Storage } from '@ai-backend/core';
import { testRedis } from '@ai-backend/test-utils/services';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryEventStore } from './MemoryEventStore.js';
import { StorageEventStore } from './StorageEventStore.js';
import { parseEventId } from './eventId.js';

const msg = (n: number): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 't', progress: n } });

async function replay(store: EventStore, lastEventId: string) {
  const got: Array<[string, JSONRPCMessage]> = [];
  const streamId = await store.replayEventsAfter(lastEventId, { send: async (id, m) => void got.push([id, m]) });
  return { streamId, got };
}

const redis = await testRedis();
const redisStorages: Storage[] = [];
afterAll(async () => {
  for (const s of redisStorages) {
    for (const key of await s.keys('')) await s.delete(key);
    await s.close();
  }
});

const backends: Array<[string, (session: string) => Promise<EventStore>]> = ([
  ['memory', async () => new MemoryEventStore()],
  ['storage (memory backend)', async (session) => new StorageEventStore(new MemoryStorage(), session)],
  [
    'storage (redis backend)',
    async (session) => {
      const config = resolveConfig({ storage: { type: 'redis', redis: { host: redis.host, port: redis.port, keyPrefix: `ai-backend-test:mcp-events:${process.pid}:${randomUUID().slice(0, 8)}:` } } });
      const storage = await createStorage(config.storage);
      redisStorages.push(storage);
      return new StorageEventStore(storage, session);
    },
  ],
] satisfies Array<[string, (session: string) => Promise<EventStore>]>).filter(([name]) => !name.includes('redis') || redis.ok);

describe.each(backends)('event store: %s', (_name, make) => {
  it('replays the events after the given one, on the same stream only, without priming events', async () => {
    const store = await make('s1');
    const priming = await store.storeEvent('streamA', {} as JSONRPCMessage);
    const a1 = await store.storeEvent('streamA', msg(1));
    await store.storeEvent('_GET_stream', msg(99));
    const a2 = await store.storeEvent('streamA', msg(2));
    expect(parseEventId(a2)).toEqual({ streamId: 'streamA', seq: 3 });

    const fromPriming = await replay(store, priming);
    expect(fromPriming.streamId).toBe('streamA');
    expect(fromPriming.got).toEqual([
      [a1, msg(1)],
      [a2, msg(2)],
    ]);
    expect((await replay(store, a1)).got).toEqual([[a2, msg(2)]]);
    expect((await replay(store, a2)).got).toEqual([]);
  });

  it('maps event ids to streams (the GET stream id contains underscores) and rejects unknown ones', async () => {
    const store = await make('s2');
    const g = await store.storeEvent('_GET_stream', msg(1));
    expect(await store.getStreamIdForEventId!(g)).toBe('_GET_stream');
    expect(await store.getStreamIdForEventId!('nope_1')).toBeUndefined();
    expect(await store.getStreamIdForEventId!('garbage')).toBeUndefined();
    expect(await store.getStreamIdForEventId!('_GET_stream_999')).toBeUndefined();
    expect((await replay(store, 'garbage')).streamId).toBe('');
  });
});

describe('MemoryEventStore bounds', () => {
  it('keeps its approximate byte budget, dropping the least recently written streams first', async () => {
    const store = new MemoryEventStore({ maxBytes: 10_000 });
    const big = (n: number): JSONRPCMessage => ({ jsonrpc: '2.0', id: n, result: { text: 'x'.repeat(3000) } });
    const a = await store.storeEvent('a', big(1));
    await store.storeEvent('b', big(2));
    await store.storeEvent('c', big(3));
    expect(await store.getStreamIdForEventId(a)).toBe('a');
    await store.storeEvent('d', big(4)); // over budget: 'a' goes
    expect(await store.getStreamIdForEventId(a)).toBeUndefined();
    expect(store.byteSize).toBeLessThanOrEqual(10_000);
    // One event larger than the whole budget still stays (it is the newest).
    const huge = await store.storeEvent('e', { jsonrpc: '2.0', id: 9, result: { text: 'y'.repeat(20_000) } });
    expect(await store.getStreamIdForEventId(huge)).toBe('e');
    expect(store.size).toBe(1);
  });

  it('keeps at most maxEventsPerStream per stream and maxStreams streams', async () => {
    const store = new MemoryEventStore({ maxEventsPerStream: 3, maxStreams: 2 });
    const ids: string[] = [];
    for (let i = 1; i <= 5; i++) ids.push(await store.storeEvent('a', msg(i)));
    expect(store.size).toBe(3);
    // Resuming from an event whose successors were dropped cannot be exact: refused.
    expect(await store.getStreamIdForEventId(ids[0]!)).toBeUndefined();
    expect(await store.getStreamIdForEventId(ids[1]!)).toBe('a');
    await store.storeEvent('b', msg(1));
    await store.storeEvent('c', msg(1)); // evicts the least recently written stream, 'a'
    expect(await store.getStreamIdForEventId(ids[4]!)).toBeUndefined();
    expect(store.size).toBe(2);
  });
});
