import type { TxPlan, TxRead } from '../kernel/Storage.js';

/** What became of a queued transaction: committed with its plan's result, or left to the caller's own path. */
export type BatchOutcome = { committed: true; result: unknown } | { committed: false };

export interface BatchJob {
  keys: string[];
  plan: (read: TxRead) => TxPlan<unknown>;
  /** False: the caller accepts that a crash loses this transaction (TransactOptions.durable). */
  durable: boolean;
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
  submit(keys: string[], plan: (read: TxRead) => TxPlan<unknown>, durable = true): Promise<BatchOutcome> {
    return new Promise<BatchOutcome>((resolve, reject) => {
      this.queue.push({ keys, plan, durable, resolve, reject });
      if (!this.flushing) {
        this.flushing = true;
        process.nextTick(() => void this.flush());
      }
    });
  }

  /** Send the queued transactions, one batch at a time, until none are left. */
  private async flush(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const jobs = this.queue.splice(0, this.maxBatch);
        await this.send(jobs).catch((err: unknown) => jobs.forEach((j) => j.reject(err)));
      }
    } finally {
      this.flushing = false;
    }
  }
}
