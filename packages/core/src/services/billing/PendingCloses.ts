import { CoreError } from '../../kernel/CoreError.js';
import type { Logger } from '../../kernel/Logger.js';

/** A settle or release the store could not take when the call ended (it was down or cut off). */
interface Job {
  kind: 'settle' | 'release';
  requestId: string;
  run: () => Promise<unknown>;
  attempts: number;
  timer?: NodeJS.Timeout | undefined;
  running?: Promise<void> | undefined;
}

/** First retry after this long; doubles up to MAX_DELAY_MS. */
const FIRST_DELAY_MS = 100;
const MAX_DELAY_MS = 5_000;

/** A failure worth retrying: the store was unreachable, or the outcome of a cut-off write is unknown. */
export function isStoreOutage(err: unknown): boolean {
  return err instanceof CoreError && err.appCode === 'UNAVAILABLE';
}

/**
 * Settles and releases that failed on a storage outage, retried until the store takes them.
 *
 * Why: a call whose upstream answered must be charged even when the store fails on the way out,
 * and the answer must still reach the client. Settle and release are idempotent per requestId
 * (the `holddone:` record), so retrying a write whose outcome is unknown is safe: it either
 * applies once or returns the first result. Until it lands, the hold stays open, so the sweeper
 * of this process settles (never releases) it: `has` tells the sweep to leave it to this queue.
 * If this process dies before the store is back, the hold is released at its expiry like any
 * hold of a crashed server (docs/billing.md, "Storage outages").
 */
export class PendingCloses {
  private readonly jobs = new Map<string, Job>();

  constructor(private readonly logger: Logger) {}

  /** Queue `run` for `key` (`<user>\n<requestId>`); it is retried with backoff until it succeeds or fails for good. */
  add(key: string, kind: Job['kind'], requestId: string, run: () => Promise<unknown>): void {
    if (this.jobs.has(key)) return;
    const job: Job = { kind, requestId, run, attempts: 0 };
    this.jobs.set(key, job);
    this.logger.warn(`billing: the store refused a ${kind}; retrying until it is back`, { requestId });
    this.schedule(key, job);
  }

  /** True while a settle or release of this hold is waiting for the store. */
  has(key: string): boolean {
    return this.jobs.has(key);
  }

  get size(): number {
    return this.jobs.size;
  }

  /** Try every queued job once now (the sweep, stop). */
  async flush(): Promise<void> {
    await Promise.all([...this.jobs.entries()].map(([key, job]) => this.attempt(key, job)));
  }

  /** Stop retrying (the process is stopping; what is left is released at its expiry by any instance). */
  stop(): void {
    for (const job of this.jobs.values()) clearTimeout(job.timer);
    if (this.jobs.size > 0)
      this.logger.error('billing: settles or releases still waiting for the store at stop', {
        requestIds: [...this.jobs.values()].map((j) => j.requestId),
      });
    this.jobs.clear();
  }

  private schedule(key: string, job: Job): void {
    const delay = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** Math.min(job.attempts, 10));
    job.timer = setTimeout(() => void this.attempt(key, job), delay).unref();
  }

  private attempt(key: string, job: Job): Promise<void> {
    // One try at a time per job (the timer and a flush may meet).
    job.running ??= this.tryOnce(key, job).finally(() => (job.running = undefined));
    return job.running;
  }

  private async tryOnce(key: string, job: Job): Promise<void> {
    if (this.jobs.get(key) !== job) return;
    clearTimeout(job.timer);
    job.attempts++;
    try {
      await job.run();
      if (this.jobs.get(key) === job) this.jobs.delete(key);
      this.logger.info(`billing: a delayed ${job.kind} went through`, { requestId: job.requestId, attempts: job.attempts });
    } catch (err) {
      if (this.jobs.get(key) !== job) return;
      if (isStoreOutage(err)) {
        this.schedule(key, job);
        return;
      }
      // Not an outage (the hold was closed elsewhere meanwhile): nothing more to do.
      this.jobs.delete(key);
      this.logger.error(`billing: a delayed ${job.kind} failed`, { requestId: job.requestId, error: String(err) });
    }
  }
}
