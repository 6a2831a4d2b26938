/** A `kv` row as SQLite returns it. */
export type Row = { key: string; value: string; expires_at: number | null; due_at: number | null };

/**
 * What the embedded store last read or wrote for each key lately: the row, or `null` for a key
 * known to be absent. SqliteStorage reads a transaction's declared keys here before SQLite.
 *
 * Why: inside a call, SQLite's statements cost two to six times what they cost in a loop (the
 * rest of the call runs between them and SQLite leaves the CPU's caches; docs/perf-log/2026-12-03.md),
 * and a metered call's two transactions read the same user's rows that the call before wrote.
 *
 * Exact because the store holds its file exclusively (one connection, one process) and every
 * statement that writes `kv` tells it (SqliteStorage: a transaction's rows as written, any other
 * write forgets its key, a purge or a failed statement forgets everything). An expired row stays
 * here as it was; readers check the expiry, as they do on SQLite's rows.
 *
 * Bounded: rows over `maxValueChars` are not kept, and past `maxRows` rows or `maxChars` of values
 * it starts again empty (a plain Map: the hot keys come back on their next read).
 */
export class KnownRows {
  private readonly rows = new Map<string, Row | null>();
  private chars = 0;

  constructor(
    private readonly maxRows = 4096,
    private readonly maxChars = 4 * 1024 * 1024,
    private readonly maxValueChars = 16 * 1024,
  ) {}

  /** The row, `null` (known absent) or `undefined` (not known: read SQLite). */
  get(key: string): Row | null | undefined {
    return this.rows.get(key);
  }

  /** Remember `key` as `row` (null: absent). A row too large to keep is forgotten instead. */
  set(key: string, row: Row | null): void {
    this.forget(key);
    if (row !== null && row.value.length > this.maxValueChars) return;
    if (this.rows.size >= this.maxRows || this.chars >= this.maxChars) this.clear();
    this.rows.set(key, row);
    this.chars += row === null ? 0 : row.value.length;
  }

  forget(key: string): void {
    const was = this.rows.get(key);
    if (was === undefined) return;
    this.rows.delete(key);
    this.chars -= was === null ? 0 : was.value.length;
  }

  clear(): void {
    this.rows.clear();
    this.chars = 0;
  }

  get size(): number {
    return this.rows.size;
  }
}
