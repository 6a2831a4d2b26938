import { randomUUID } from 'node:crypto';
import type { EventStore, JSONRPCMessage } from '@modelcontextprotocol/server';
import { createStorage, MemoryStorage, resolveConfig, type Storage } from '@ai-backend/core';
import { testRedis } from '@ai-backend/test-utils/services';
import { afterAll, describe, expect, it } from 'vitest';
import { EventLedger } from './EventLedger.js';
import { MemoryEventStore } from './MemoryEventStore.js';
import { MAX_STREAMS_TRACKED, StorageEventStore } from './StorageEventStore.js';
import { parseEventId } from './eventId.js';

const msg = (n: number): JSONRPCMessage => ({
  jsonrpc: '2.0',
  method: 'notifications/progress',
  params: { progressToken: 't', progress: n },
});

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

const backends: Array<[string, (session: string) => Promise<EventStore>]> = (
  [
    ['memory', async () => new MemoryEventStore()],
    ['storage (memory backend)', async (session) => new StorageEventStore(new MemoryStorage(), session)],
    [
      'storage (redis backend)',
      async (session) => {
        const config = resolveConfig({
          storage: {
            type: 'redis',
            redis: {
              host: redis.host,
              port: redis.port,
              keyPrefix: `ai-backend-test:mcp-events:${process.pid}:${randomUUID().slice(0, 8)}:`,
            },
          },
        });
        const storage = await createStorage(config.storage);
        redisStorages.push(storage);
        return new StorageEventStore(storage, session);
      },
    ],
  ] satisfies Array<[string, (session: string) => Promise<EventStore>]>
).filter(([name]) => !name.includes('redis') || redis.ok);

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
    // One event larger than the whole session budget is sent but not kept: the budget is hard.
    await store.storeEvent('e', { jsonrpc: '2.0', id: 9, result: { text: 'y'.repeat(20_000) } });
    expect(store.byteSize).toBeLessThanOrEqual(10_000);
  });

  it('shares one total budget across sessions, evicting the oldest events of any session first', async () => {
    const ledger = new EventLedger(20_000);
    const big = (n: number): JSONRPCMessage => ({ jsonrpc: '2.0', id: n, result: { text: 'x'.repeat(3000) } });
    const stores = Array.from({ length: 10 }, () => new MemoryEventStore({ ledger }));
    const first = await stores[0]!.storeEvent('a', big(0));
    for (let i = 1; i < 10; i++) await stores[i]!.storeEvent('a', big(i));
    expect(ledger.bytes).toBeLessThanOrEqual(20_000);
    expect(stores[0]!.size).toBe(0); // the oldest went first
    expect(first).toBe('a_1');
    expect(stores[9]!.size).toBe(1); // the newest stays
    stores[9]!.dispose();
    expect(ledger.count).toBe(stores.reduce((n, s) => n + s.size, 0));
  });

  it('does not keep events above maxEventBytes or older than ttlMs', async () => {
    let now = 1_000_000;
    const store = new MemoryEventStore({ maxEventBytes: 1000, ttlMs: 60_000, now: () => now });
    const small = await store.storeEvent('a', msg(1));
    await store.storeEvent('a', { jsonrpc: '2.0', id: 2, result: { text: 'z'.repeat(2000) } });
    expect(store.size).toBe(1);
    now += 61_000;
    expect(await store.getStreamIdForEventId(small)).toBeUndefined();
    expect(store.size).toBe(0);
  });

  it('drops events past ttlMs through the shared ledger, also in stores nobody writes to or reads again', async () => {
    let now = 1_000_000;
    const ledger = new EventLedger(1024 * 1024);
    const abandoned = new MemoryEventStore({ ttlMs: 60_000, ledger, now: () => now });
    const active = new MemoryEventStore({ ttlMs: 60_000, ledger, now: () => now });
    await abandoned.storeEvent('a', msg(1));
    await abandoned.storeEvent('a', msg(2));
    now += 30_000;
    const recent = await active.storeEvent('b', msg(3));
    now += 31_000;
    ledger.expire(now - 60_000);
    expect(abandoned.size).toBe(0);
    expect(active.size).toBe(1);
    expect(await active.getStreamIdForEventId(recent)).toBe('b');
    expect(ledger.count).toBe(1);
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

describe('StorageEventStore bounds (memory and redis storage)', () => {
  const storages: Array<[string, () => Promise<Storage>]> = [
    ['memory', async () => new MemoryStorage()],
    [
      'redis',
      async () => {
        const config = resolveConfig({
          storage: {
            type: 'redis',
            redis: {
              host: redis.host,
              port: redis.port,
              keyPrefix: `ai-backend-test:mcp-ev-bounds:${process.pid}:${randomUUID().slice(0, 8)}:`,
            },
          },
        });
        const storage = await createStorage(config.storage);
        redisStorages.push(storage);
        return storage;
      },
    ],
  ].filter(([name]) => name !== 'redis' || redis.ok) as Array<[string, () => Promise<Storage>]>;
  const big = (n: number): JSONRPCMessage => ({ jsonrpc: '2.0', id: n, result: { text: 'x'.repeat(3000) } });
  const eventKeys = async (storage: Storage, session: string) => (await storage.keys(`mcp:ev:${session}:`)).filter((k) => /:\d+$/.test(k));

  it.each(storages)('%s: per stream count, per session bytes, per event bytes, total bytes; oldest evicted first', async (_n, open) => {
    const storage = await open();
    const counted = new StorageEventStore(storage, 'count', { maxEventsPerStream: 3 });
    for (let i = 1; i <= 6; i++) await counted.storeEvent('a', msg(i));
    expect((await eventKeys(storage, 'count')).sort()).toEqual(['mcp:ev:count:a:4', 'mcp:ev:count:a:5', 'mcp:ev:count:a:6']);

    const sized = new StorageEventStore(storage, 'bytes', { sessionBytes: 10_000 });
    for (let i = 1; i <= 6; i++) await sized.storeEvent('a', big(i));
    const kept = (await eventKeys(storage, 'bytes')).map((k) => Number(k.split(':').pop())).sort((x, y) => x - y);
    expect(kept.length).toBeLessThanOrEqual(3);
    expect(kept.at(-1)).toBe(6); // the newest stay, the oldest went

    const oneBig = new StorageEventStore(storage, 'huge', { maxEventBytes: 1000 });
    await oneBig.storeEvent('a', big(1));
    expect(await eventKeys(storage, 'huge')).toEqual([]);

    const total = new StorageEventStore(storage, 'total', { totalBytes: 7000 });
    for (let i = 1; i <= 4; i++) await total.storeEvent('a', big(i));
    expect((await eventKeys(storage, 'total')).length).toBeLessThan(4);
  });

  it('tracks a bounded number of streams in a long session (one per POST), and a stream it dropped still keeps its count bound', async () => {
    const storage = new MemoryStorage();
    const store = new StorageEventStore(storage, 'long', { maxEventsPerStream: 2 });
    for (let i = 0; i < MAX_STREAMS_TRACKED + 200; i++) await store.storeEvent(`post-${i}`, msg(i));
    expect(store.streamsTracked).toBe(MAX_STREAMS_TRACKED);
    // post-0 is no longer tracked: its next events still leave only the last two stored.
    for (let i = 1; i <= 4; i++) await store.storeEvent('post-0', msg(i));
    expect((await eventKeys(storage, 'long')).filter((k) => k.startsWith('mcp:ev:long:post-0:')).sort()).toEqual([
      'mcp:ev:long:post-0:4',
      'mcp:ev:long:post-0:5',
    ]);
  });
});
