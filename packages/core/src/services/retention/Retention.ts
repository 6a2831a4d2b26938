import { randomUUID } from 'node:crypto';
import type { Logger } from '../../kernel/Logger.js';
import type { LogEntry, Storage } from '../../kernel/Storage.js';
import { ledgerKeys, type LedgerCheckpoint } from '../billing/Ledger.js';
import { BALANCE_TYPES, type LedgerEntry } from '../billing/types.js';
import { ArchiveFile, type ArchiveFormat } from './ArchiveFile.js';

/** The logs retention archives, by the prefix of their names (services/billing/Ledger.ts). */
export const RETENTION_KINDS = {
  /** Balance movements: `ledger:<user>`. Archived under a checkpoint, so audits stay whole. */
  ledger: 'ledger:',
  /** Finished calls (usage history): `usage:<user>`. */
  usage: 'usage:',
  /** Credits: `purchases:<user>` and `purchases:<user>:<type>`. */
  purchases: 'purchases:',
} as const;
export type RetentionKind = keyof typeof RETENTION_KINDS;

export interface RetentionOptions {
  /** Age in days past which a kind's records are archived; a kind not listed is kept forever. */
  days: Partial<Record<RetentionKind, number | undefined>>;
  /** Where each run's export files go. */
  exportDir: string;
  format: ArchiveFormat;
  /** Records per batch: one export write, one checkpoint, one delete. */
  batchSize: number;
}

export interface RetentionReport {
  /**
   * Per kind: records archived and deleted, logs examined, the export file (when it wrote any), and
   * `stuck`: logs left from a record that cannot be archived (a ledger record with no valid lines).
   */
  kinds: Partial<Record<RetentionKind, { archived: number; logs: number; stuck?: number; file?: string }>>;
  startedAt: string;
  finishedAt: string;
  /** Why nothing was done (another instance holds the run). */
  skipped?: string;
}

const DAY_MS = 86_400_000;
const LOCK_KEY = 'retention:run';
/** Longest a run may hold the cluster-wide lease (a run that takes longer may meet a second one: harmless, see checkpoint). */
const LEASE_MS = 6 * 3_600_000;
const LOG_PAGE = 200;

/**
 * Retention and archiving of the append-only histories: records older than a kind's age are
 * written to an export file (JSON Lines or CSV, fsynced) and only then deleted from the store.
 *
 * It never changes a balance: balances live in each user's account row, which it never touches.
 * The ledger's audit (Ledger.audit) sums the lines; before a ledger batch is deleted, its sums are
 * added to the user's checkpoint row (`ledgercp:<user>`, throughSeq + sums) in one transaction, and
 * the audit starts from the checkpoint. It never locks the hot path: a batch is at most
 * `batchSize` records of one log, each step is its own short write (the checkpoint transaction
 * declares only the checkpoint key, never the account row a metered call locks), and a log's
 * newest records are never in a batch.
 */
export class Retention {
  private running: Promise<RetentionReport> | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly storage: Storage,
    private readonly opts: RetentionOptions,
    private readonly logger: Logger,
  ) {}

  /** True when some kind has an age: otherwise there is nothing to run. */
  get enabled(): boolean {
    return Object.values(this.opts.days).some((d) => d !== undefined);
  }

  /** Run every `everyMs` (none when 0 or nothing is enabled); a failed run is logged and retried next time. */
  start(everyMs: number): void {
    if (everyMs <= 0 || !this.enabled || this.timer) return;
    this.timer = setInterval(() => {
      this.run().catch((err: unknown) =>
        this.logger.warn('retention run failed', { error: err instanceof Error ? err.message : String(err) }),
      );
    }, everyMs).unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }

  /**
   * One run (a run under way in this process is joined; one under way on another instance makes
   * this one answer `skipped`, so two instances never export the same records twice).
   */
  run(now = Date.now()): Promise<RetentionReport> {
    this.running ??= this.runLocked(now).finally(() => (this.running = undefined));
    return this.running;
  }

  private async runLocked(now: number): Promise<RetentionReport> {
    const startedAt = new Date(now).toISOString();
    // A lease, not a lock held by a connection: an instance that dies mid-run frees it after LEASE_MS.
    const lease = { by: randomUUID(), at: new Date().toISOString() };
    if (!(await this.storage.compareAndSet(LOCK_KEY, undefined, lease, { ttlMs: LEASE_MS }))) {
      return { kinds: {}, startedAt, finishedAt: new Date().toISOString(), skipped: 'another instance is running retention' };
    }
    try {
      return await this.runOnce(now);
    } finally {
      // Only our own lease: after LEASE_MS another instance may hold a new one.
      await this.storage
        .transact([LOCK_KEY], (read) => ({
          writes: read<typeof lease>(LOCK_KEY)?.by === lease.by ? [{ op: 'delete', key: LOCK_KEY }] : [],
          result: undefined,
        }))
        .catch(() => undefined);
    }
  }

  private async runOnce(now: number): Promise<RetentionReport> {
    const startedAt = new Date(now).toISOString();
    const report: RetentionReport = { kinds: {}, startedAt, finishedAt: startedAt };
    for (const kind of Object.keys(RETENTION_KINDS) as RetentionKind[]) {
      const days = this.opts.days[kind];
      if (days === undefined) continue;
      const file = new ArchiveFile(this.opts.exportDir, `${kind}-${startedAt.replace(/[:.]/g, '-')}`, this.opts.format);
      try {
        const done = await this.archiveKind(kind, now - days * DAY_MS, file);
        report.kinds[kind] = { ...done, ...(file.rows > 0 ? { file: file.path } : {}) };
      } finally {
        await file.close();
      }
    }
    report.finishedAt = new Date().toISOString();
    this.logger.info('retention run', { kinds: report.kinds });
    return report;
  }

  private async archiveKind(
    kind: RetentionKind,
    cutoff: number,
    file: ArchiveFile,
  ): Promise<{ archived: number; logs: number; stuck?: number }> {
    let archived = 0;
    let logs = 0;
    let stuck = 0;
    let cursor: string | undefined;
    do {
      const page = await this.storage.listLogs(RETENTION_KINDS[kind], { cursor, limit: LOG_PAGE });
      for (const log of page.logs) {
        logs++;
        const done = await this.archiveLog(kind, log, cutoff, file);
        archived += done.archived;
        if (done.stuckAt === undefined) continue;
        stuck++;
        this.logger.warn('retention: a ledger record cannot be archived (no valid lines); the log is kept from it on', {
          log,
          seq: done.stuckAt,
        });
      }
      cursor = page.cursor;
    } while (cursor !== undefined);
    return { archived, logs, ...(stuck > 0 ? { stuck } : {}) };
  }

  /**
   * Archive one log's records older than `cutoff`, oldest first, a batch at a time. A ledger
   * record whose lines cannot be summed into the checkpoint stops this log there (`stuckAt`, its
   * seq): the records before it are archived, it and the later ones stay; the run goes on with the
   * next log. Before, its checkpoint failed the whole run after the batch was exported, so every
   * log listed after it was never archived and the batch was exported again at every run.
   */
  private async archiveLog(
    kind: RetentionKind,
    log: string,
    cutoff: number,
    file: ArchiveFile,
  ): Promise<{ archived: number; stuckAt?: number }> {
    let archived = 0;
    for (;;) {
      const rows = await this.storage.readLog<{ at?: string }>(log, { limit: this.opts.batchSize });
      let old = takeOlder(rows, cutoff);
      const bad = kind === 'ledger' ? old.findIndex((e) => !summable(e.record)) : -1;
      if (bad >= 0) old = old.slice(0, bad);
      if (old.length === 0) return bad >= 0 ? { archived, stuckAt: rows[bad]!.seq } : { archived };
      await file.write(log, old);
      const throughSeq = old.at(-1)!.seq;
      if (kind === 'ledger') await this.checkpoint(log, old as LogEntry<LedgerEntry>[]);
      await this.storage.trimLog(log, throughSeq);
      archived += old.length;
      if (bad >= 0) return { archived, stuckAt: rows[bad]!.seq };
      if (old.length < rows.length || rows.length < this.opts.batchSize) return { archived };
    }
  }

  /** Add a ledger batch's sums to the user's checkpoint, once (a batch already counted is skipped). */
  private async checkpoint(log: string, batch: LogEntry<LedgerEntry>[]): Promise<void> {
    const key = ledgerKeys.checkpoint(decodeURIComponent(log.slice(RETENTION_KINDS.ledger.length)));
    await this.storage.transact([key], (read) => {
      const cp = read<LedgerCheckpoint>(key) ?? { throughSeq: 0, sums: { subscription: 0, one_time: 0 } };
      const sums = { ...cp.sums };
      let throughSeq = cp.throughSeq;
      for (const e of batch) {
        if (e.seq <= cp.throughSeq) continue;
        for (const l of e.record.lines) sums[l.type] += l.delta;
        throughSeq = e.seq;
      }
      if (throughSeq === cp.throughSeq) return { writes: [], result: undefined };
      return { writes: [{ op: 'set', key, value: { throughSeq, sums } satisfies LedgerCheckpoint }], result: undefined };
    });
  }
}

/** A ledger record the checkpoint can add up: a list of lines, each a balance type and a finite delta. */
function summable(record: unknown): boolean {
  const lines = (record as { lines?: unknown } | null)?.lines;
  return (
    Array.isArray(lines) &&
    lines.every(
      (l: { type?: unknown; delta?: unknown } | null) =>
        BALANCE_TYPES.includes(l?.type as never) && typeof l!.delta === 'number' && Number.isFinite(l!.delta),
    )
  );
}

/** The leading records dated before `cutoff` (a log is in time order: stop at the first newer one). */
function takeOlder<T extends { at?: string }>(rows: LogEntry<T>[], cutoff: number): LogEntry<T>[] {
  const out: LogEntry<T>[] = [];
  for (const r of rows) {
    const at = r.record.at ? Date.parse(r.record.at) : NaN;
    if (!(at < cutoff)) break;
    out.push(r);
  }
  return out;
}
