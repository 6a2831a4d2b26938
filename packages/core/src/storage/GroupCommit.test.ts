import { describe, expect, it } from 'vitest';
import { CoreError } from '../kernel/CoreError.js';
import { GroupCommit, type BatchJob } from './GroupCommit.js';

const plan = () => ({ writes: [], result: undefined });

/**
 * A store whose batches stay in flight until the test ends them (`finish`, oldest first), then end
 * as `fail` says: committed, or every job rejected with its value. Gated rather than timed, so a
 * loaded machine cannot end a batch before the test has queued what it means to queue behind it.
 */
function store(fail?: () => unknown) {
  const batches: number[] = [];
  const ends: Array<() => void> = [];
  const watchers: Array<{ n: number; resolve: () => void }> = [];
  const commit = new GroupCommit(100, async (jobs: BatchJob[]) => {
    batches.push(jobs.length);
    for (const w of watchers.filter((w) => batches.length >= w.n)) w.resolve();
    await new Promise<void>((r) => ends.push(r));
    const failure = fail?.();
    for (const j of jobs) failure === undefined ? j.resolve({ committed: true, result: 'ok' }) : j.reject(failure);
  });
  const submit = () =>
    commit.submit(['k'], plan).then(
      () => 'committed',
      (err: unknown) => err,
    );
  /** Resolves once the `n`th batch has gone out (is in flight). */
  const sent = (n: number) => new Promise<void>((resolve) => (batches.length >= n ? resolve() : watchers.push({ n, resolve })));
  const finish = () => ends.shift()!();
  return { batches, submit, sent, finish };
}

describe('GroupCommit', () => {
  it('queues the transactions that arrive while a batch is in flight into the next one', async () => {
    const s = store();
    const first = s.submit();
    await s.sent(1);
    const queued = [s.submit(), s.submit(), s.submit()];
    s.finish();
    await s.sent(2);
    s.finish();
    expect(await Promise.all([first, ...queued])).toEqual(['committed', 'committed', 'committed', 'committed']);
    expect(s.batches).toEqual([1, 3]);
  });

  it('fails the queued transactions with a batch that found the store unreachable, without sending them', async () => {
    let down = true;
    const outage = new CoreError('UNAVAILABLE', 'storage unavailable');
    const s = store(() => (down ? outage : undefined));
    const first = s.submit();
    await s.sent(1);
    const queued = Promise.all([s.submit(), s.submit()]);
    s.finish();
    // They fail when the first batch does, not in a batch (and after a timeout) of their own: a
    // second batch would stay in flight, so it is raced here rather than timed.
    expect(await Promise.race([queued, s.sent(2).then(() => 'sent in a batch of their own')])).toEqual([outage, outage]);
    expect(await first).toBe(outage);
    expect(s.batches).toEqual([1]);
    down = false;
    const next = s.submit();
    await s.sent(2);
    s.finish();
    expect(await next).toBe('committed');
    expect(s.batches).toEqual([1, 1]);
  });

  it('a batch failing for its own reason leaves the queued transactions to the next batch', async () => {
    let calls = 0;
    const s = store(() => (calls++ === 0 ? new Error('a plan could not be encoded') : undefined));
    const first = s.submit();
    await s.sent(1);
    const queued = s.submit();
    s.finish();
    expect(await first).toBeInstanceOf(Error);
    await s.sent(2);
    s.finish();
    expect(await queued).toBe('committed');
    expect(s.batches).toEqual([1, 1]);
  });
});
