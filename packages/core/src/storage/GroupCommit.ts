import type { TxPlan, TxRead, TxWrite } from '../kernel/Storage.js';
import { unavailableFailure } from './KeyedMutex.js';

/** What became of a queued transaction: committed with its plan's result, or left to the caller's own path. */
export type BatchOutcome = { committed: true; result: unknown } | { committed: false };

/**
 * How a transaction commits: 'durable' waits for the store's flush, 'async' may answer before it
 * (TransactOptions.durable false: the caller accepts that a crash loses this transaction).
 */
export type CommitMode = 'durable' | 'async';

export interface BatchJob {
  keys: string[];
  plan: (read: TxRead) => TxPlan<unknown>;
  commit: CommitMode;
  resolve(outcome: BatchOutcome): void;
  reject(err: unknown): void;
}

/**
 * The queue of a store's group commit (PostgresStorage and RedisStorage): transactions that
 * arrive while a batch is in flight wait here and go out together in the next one, at most
 * `maxBatch` at a time, through the store's `send`. A batch that throws fails its own
 * transactions, so no caller is ever left waiting.
 */
export class GroupCommit {
  private readonly queue: BatchJob[] = [];
  private flushing = false;

  constructor(
    private readonly maxBatch: number,
    private readonly send: (jobs: BatchJob[]) => Promise<void>,
  ) {}

  /** Queue a transaction for the next batch (sent on the next tick when none is in flight). */
  submit(keys: string[], plan: (read: TxRead) => TxPlan<unknown>, commit: CommitMode = 'durable'): Promise<BatchOutcome> {
    return new Promise<BatchOutcome>((resolve, reject) => {
      this.queue.push({ keys, plan, commit, resolve, reject });
      if (!this.flushing) {
        this.flushing = true;
        process.nextTick(() => void this.flush());
      }
    });
  }

  /**
   * Send the queued transactions, one batch at a time, until none are left. When a batch fails
   * because the store is unreachable (unavailableFailure), the transactions that queued while it
   * was in flight fail with it at once rather than go out as the next batch and wait for a
   * timeout of their own; one submitted after that starts a new batch.
   */
  private async flush(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        let outage: unknown;
        const jobs = this.queue.splice(0, this.maxBatch).map(
          (job): BatchJob => ({
            ...job,
            reject: (err) => {
              outage ??= unavailableFailure(err);
              job.reject(err);
            },
          }),
        );
        await this.send(jobs).catch((err: unknown) => jobs.forEach((j) => j.reject(err)));
        if (outage !== undefined) for (const queued of this.queue.splice(0)) queued.reject(outage);
      }
    } finally {
      this.flushing = false;
    }
  }
}

/** How a store plans a group-commit batch: its rows as plans read them, its writes as it sends them. */
export interface BatchPlanner<Row, Encoded> {
  /** What this process last knew of `key`: a guess the batch's commit must check. */
  guess(key: string): Row;
  /** A plan's reader over the rows it declared. */
  reader(rows: Map<string, Row>): TxRead;
  /** A plan's writes as the store sends them (never empty). Throws when a value cannot be encoded. */
  encode(writes: readonly TxWrite[]): Encoded;
  /** The keys an encoded plan writes, each with its row as the next plan of the batch sees it. */
  written(encoded: Encoded): Iterable<readonly [string, Row]>;
}

/** A planned batch: what goes out in the one commit. */
export interface PlannedBatch<Row, Encoded> {
  /** The transactions whose plans go out, in order, with their results. */
  accepted: Array<{ job: BatchJob; result: unknown }>;
  /** Every key the accepted plans read before the batch wrote it, with the row they assumed. */
  expected: Map<string, Row>;
  /** The accepted plans' encoded writes, in order. */
  encoded: Encoded[];
}

/**
 * Plan a batch (PostgresStorage.runBatch, RedisStorage.runBatch): each transaction in turn,
 * against what this process last knew of its keys plus the writes of the plans before it. If the
 * store's commit finds every `expected` row unchanged, each plan saw exactly the state the ones
 * before it left: the same outcome as running them in order. A plan that throws or writes nothing
 * on a guess is resolved `committed: false` at once (its caller takes the store's normal path), and
 * its guesses leave the check, so they cannot fail the others.
 */
export function planBatch<Row, Encoded>(jobs: readonly BatchJob[], planner: BatchPlanner<Row, Encoded>): PlannedBatch<Row, Encoded> {
  /** Each key as the next plan sees it (guessed, or written by an earlier plan of the batch). */
  const overlay = new Map<string, Row>();
  const expected = new Map<string, Row>();
  const accepted: PlannedBatch<Row, Encoded>['accepted'] = [];
  const encoded: Encoded[] = [];
  for (const job of jobs) {
    const introduced: string[] = [];
    const rows = new Map<string, Row>();
    for (const k of job.keys) {
      let row = overlay.get(k);
      if (row === undefined) {
        row = planner.guess(k);
        overlay.set(k, row);
        expected.set(k, row);
        introduced.push(k);
      }
      rows.set(k, row);
    }
    let planned: TxPlan<unknown> | undefined;
    let out: Encoded | undefined;
    try {
      planned = job.plan(planner.reader(rows));
      if (planned.writes.length > 0) out = planner.encode(planned.writes);
    } catch {
      planned = undefined; // decided on a guess (or unencodable): decided again on the normal path
    }
    if (!planned || out === undefined) {
      // Nothing of this plan goes out: neither may its guesses fail the others' check.
      for (const k of introduced) {
        overlay.delete(k);
        expected.delete(k);
      }
      job.resolve({ committed: false });
      continue;
    }
    for (const [key, row] of planner.written(out)) overlay.set(key, row);
    encoded.push(out);
    accepted.push({ job, result: planned.result });
  }
  return { accepted, expected, encoded };
}
