import { describe, expect, it } from 'vitest';
import { CoreError } from '../kernel/CoreError.js';
import { GroupCommit, type BatchJob } from './GroupCommit.js';

const plan = () => ({ writes: [], result: undefined });

/** A store whose batches take `ms` and end as `end` says: committed, or every job rejected with `fail`. */
function store(ms: number, fail?: () => unknown) {
  const batches: number[] = [];
  const commit = new GroupCommit(100, async (jobs: BatchJob[]) => {
    batches.push(jobs.length);
    await new Promise((r) => setTimeout(r, ms));
    const failure = fail?.();
    for (const j of jobs) failure === undefined ? j.resolve({ committed: true, result: 'ok' }) : j.reject(failure);
  });
  const submit = () =>
    commit.submit(['k'], plan).then(
      () => 'committed',
      (err: unknown) => err,
    );
  return { batches, submit };
}

describe('GroupCommit', () => {
  it('queues the transactions that arrive while a batch is in flight into the next one', async () => {
    const s = store(20);
    const first = s.submit();
    await new Promise((r) => setTimeout(r, 5));
    const queued = [s.submit(), s.submit(), s.submit()];
    expect(await Promise.all([first, ...queued])).toEqual(['committed', 'committed', 'committed', 'committed']);
    expect(s.batches).toEqual([1, 3]);
  });

  it('fails the queued transactions with a batch that found the store unreachable, without sending them', async () => {
    let down = true;
    const outage = new CoreError('UNAVAILABLE', 'storage unavailable');
    const s = store(30, () => (down ? outage : undefined));
    const first = s.submit();
    await new Promise((r) => setTimeout(r, 5));
    const started = performance.now();
    const queued = await Promise.all([s.submit(), s.submit()]);
    // They failed when the first batch did, not after a batch (and a timeout) of their own.
    expect(performance.now() - started).toBeLessThan(30);
    expect(queued).toEqual([outage, outage]);
    expect(await first).toBe(outage);
    expect(s.batches).toEqual([1]);
    down = false;
    expect(await s.submit()).toBe('committed');
    expect(s.batches).toEqual([1, 1]);
  });

  it('a batch failing for its own reason leaves the queued transactions to the next batch', async () => {
    let calls = 0;
    const s = store(10, () => (calls++ === 0 ? new Error('a plan could not be encoded') : undefined));
    const first = s.submit();
    await new Promise((r) => setTimeout(r, 2));
    const queued = s.submit();
    expect(await first).toBeInstanceOf(Error);
    expect(await queued).toBe('committed');
    expect(s.batches).toEqual([1, 1]);
  });
});
