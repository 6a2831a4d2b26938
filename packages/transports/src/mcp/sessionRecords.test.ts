import { MemoryStorage, type Storage } from '@ai-backend/core/internal';
import { describe, expect, it } from 'vitest';
import { SessionRecords } from './sessionRecords.js';

const ID = '0b6f6a4e-6a8e-4f55-9d55-3a0b3c1c2d3e';
const record = { owner: 'sub:u1', init: { protocolVersion: '2025-11-25' } };

/** A store whose writes take `ms` (a remote Redis), or fail. */
function slowStore(ms: number, fail = false): Storage {
  const store = new MemoryStorage();
  const set = store.set.bind(store);
  store.set = async (...args: Parameters<Storage['set']>) => {
    await new Promise((r) => setTimeout(r, ms));
    if (fail) throw new Error('store down');
    return set(...args);
  };
  return store;
}

describe('SessionRecords', () => {
  it('a session removed while its record is being saved leaves nothing behind, here or in the store', async () => {
    const store = slowStore(30);
    const records = new SessionRecords(store, 60_000);
    const saving = records.save(ID, record);
    await records.remove(ID); // the DELETE of a session whose initialize is still being recorded
    await saving;
    expect(records.size).toBe(0);
    // The write did not land after the delete: no other instance can take the closed session over.
    expect(await store.get(`mcp:session:${ID}`)).toBeUndefined();
    expect(await records.load(ID)).toBeUndefined();
  });

  it('a session removed while a touch refreshes its record leaves no record in the store', async () => {
    const store = slowStore(30);
    const records = new SessionRecords(store, 60_000);
    records.touch(ID, () => record); // activity on a session this instance has not saved a record for lately
    await records.remove(ID);
    await new Promise((r) => setTimeout(r, 60));
    expect(await records.load(ID)).toBeUndefined();
  });

  it("a live session's record is saved and loaded; removed, it is gone", async () => {
    const records = new SessionRecords(slowStore(1), 60_000);
    await records.save(ID, record);
    expect(await records.load(ID)).toEqual(record);
    await records.remove(ID);
    expect(await records.load(ID)).toBeUndefined();
  });

  it('a record that could not be saved is not kept alive', async () => {
    const records = new SessionRecords(slowStore(1, true), 60_000);
    await expect(records.save(ID, record)).rejects.toThrow(/store down/);
    expect(records.size).toBe(0);
  });
});
