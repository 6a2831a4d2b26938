import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { failSafeEventStore } from './failSafeEventStore.js';
import { MemoryEventStore } from './MemoryEventStore.js';

const message: JSONRPCMessage = { jsonrpc: '2.0', id: 1, result: { content: [] } };

describe('failSafeEventStore', () => {
  it('stores through an in-memory store at once: the event is replayable when the promise resolves', async () => {
    const store = new MemoryEventStore();
    const failures: unknown[] = [];
    const safe = failSafeEventStore(store, undefined, (_op, err) => failures.push(err));
    await safe.storeEvent('s1', {} as JSONRPCMessage);
    const id = await safe.storeEvent('s1', message);
    expect(id).toBe('s1_2');
    expect(store.size).toBe(1);
    expect(failures).toEqual([]);
  });

  it('answers a store that throws at once with an id nobody resumes from, and reports it, for both kinds of store', async () => {
    const boom = new Error('store broken');
    const immediate = Object.assign(new MemoryEventStore(), {
      storeEventNow: () => {
        throw boom;
      },
    });
    const asynchronous = {
      storeEvent: async () => {
        throw boom;
      },
      replayEventsAfter: async () => '',
    };
    for (const store of [immediate, asynchronous]) {
      const failures: Array<[string, unknown]> = [];
      const safe = failSafeEventStore(store, undefined, (op, err) => failures.push([op, err]));
      await expect(safe.storeEvent('s1', message)).resolves.toBe('s1_0');
      expect(failures).toEqual([['store', boom]]);
    }
  });

  it('bounds a slow store by timeoutMs', async () => {
    const slow = { storeEvent: () => new Promise<string>(() => undefined), replayEventsAfter: async () => '' };
    const failures: string[] = [];
    const safe = failSafeEventStore(slow, 20, (op) => failures.push(op));
    await expect(safe.storeEvent('s1', message)).resolves.toBe('s1_0');
    expect(failures).toEqual(['store']);
  });
});
