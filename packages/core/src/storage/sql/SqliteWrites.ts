import type { SqliteDatabase, SqliteStatement } from './SqliteDriver.js';

/** A key's row as a non-durable transaction left it; `null`: deleted. */
export interface PendingRow {
  value: string;
  expires_at: number | null;
  due_at: number | null;
}

/** How long a non-durable transaction may wait for its commit when no durable write comes first. */
export const DEFERRED_COMMIT_MS = 20;

/**
 * The embedded store's write transactions, and where its non-durable ones wait for a commit
 * (TransactOptions.durable false: a call's hold, a BYOK call's usage record).
 *
 * Why: most of a SQLite transaction's cost is its commit, which writes every page the transaction
 * changed to the WAL (bench/sqliteWalPages.mjs). A metered call made two commits, its hold's and
 * its settle's, over mostly the same pages (the user's rows, the logs' last leaves). A
 * non-durable transaction now runs in a write transaction left open, and the next
 * durable write (in a metered call, its own settle) or a timer after DEFERRED_COMMIT_MS commits
 * everything together: one commit per call, each page written once.
 *
 * A non-durable transaction's row writes wait in JavaScript (`pending`), not in SQLite's pages, until
 * the commit: a metered call's hold row is set and then deleted by its settle, and its account and
 * spend rows written twice, so they reach SQLite once or never (a b-tree leaf and the due index's
 * page less in the WAL per call, four statements less). Transactions read through `pending`; every
 * other operation spills it into the open transaction first (SqliteStorage).
 *
 * What waits is lost, whole, if the process dies first. That is what `durable: false` allows: the
 * holds of calls in flight die with the calls (a crashed server's holds were released at their
 * expiry before, so such calls were already free), and a lost BYOK record moves no money. Durable
 * writes are committed before they return, as before, and commit what waited with them.
 */
export class SqliteWrites {
  /** Set while a write transaction is open with non-durable work in it. */
  private timer: NodeJS.Timeout | undefined;
  private readonly st: Record<'begin' | 'commit' | 'rollback', SqliteStatement>;
  /** Rows of non-durable transactions not yet written to SQLite. Empty unless a transaction is open. */
  readonly pending = new Map<string, PendingRow | null>();

  /**
   * `onLateFailure`: a timer's commit failed (the caller that wrote is gone; the store records it).
   * `writeRow`: writes one pending row (or its delete) into the open transaction.
   */
  constructor(
    private readonly db: SqliteDatabase,
    private readonly onLateFailure: (err: unknown) => void,
    private readonly writeRow: (key: string, row: PendingRow | null) => void,
  ) {
    const p = (sql: string) => db.prepare(sql);
    this.st = {
      begin: p('BEGIN IMMEDIATE'),
      commit: p('COMMIT'),
      rollback: p('ROLLBACK'),
    };
  }

  /**
   * A durable write transaction: committed, with whatever waited, before it returns. Inside an
   * open transaction a throw rolls back everything in it, what waited included (savepoints would
   * copy every page they touch to a sub-journal first: more than the commit they save). So
   * callers plan before they write: only SQLite itself (a failed write, a corrupt row) throws here.
   */
  durable<T>(fn: () => T): T {
    if (this.timer === undefined) return this.db.immediate(fn);
    const result = this.orAbandon(fn);
    this.commit();
    return result;
  }

  /**
   * A durable operation other than a transaction (an increment, an append …): what waits is
   * written first, so the operation reads and overwrites it, then both commit together.
   */
  operation<T>(fn: () => T): T {
    this.spill();
    return this.durable(fn);
  }

  /** One durable statement: SQLite's own transaction when nothing waits, else as `operation`. */
  statement<T>(fn: () => T): T {
    return this.timer === undefined ? fn() : this.operation(fn);
  }

  /**
   * A non-durable write transaction: applied now (later reads see it, its rows through `pending`),
   * committed by the next durable write or the timer.
   */
  deferred<T>(fn: () => T): T {
    if (this.timer === undefined) {
      this.st.begin.run();
      this.timer = setTimeout(() => this.commitLate(), DEFERRED_COMMIT_MS);
      // A process that exits without closing the store loses what waits, as a crash would.
      this.timer.unref();
    }
    return this.orAbandon(fn);
  }

  /** Write the pending rows into the open transaction (an operation that reads SQLite alone comes next). */
  spill(): void {
    if (this.pending.size === 0) return;
    try {
      for (const [key, row] of this.pending) this.writeRow(key, row);
    } catch (err) {
      this.abandon();
      throw err;
    }
    this.pending.clear();
  }

  /** Commit what waits now (the store closes). A failed commit throws and loses it. */
  flush(): void {
    if (this.timer !== undefined) this.commit();
  }

  private orAbandon<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      this.abandon();
      throw err;
    }
  }

  private commit(): void {
    this.spill();
    clearTimeout(this.timer);
    this.timer = undefined;
    try {
      this.st.commit.run();
    } catch (err) {
      // A COMMIT that failed on I/O may leave the transaction open: close it, so the next write starts clean.
      this.abandon();
      throw err;
    }
  }

  private commitLate(): void {
    try {
      this.commit();
    } catch (err) {
      this.onLateFailure(err);
    }
  }

  private abandon(): void {
    this.pending.clear();
    clearTimeout(this.timer);
    this.timer = undefined;
    try {
      this.st.rollback.run();
    } catch {
      /* no transaction was open any more */
    }
  }
}
