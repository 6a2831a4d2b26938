import { open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreError } from '../errors/index.js';

interface Waiter {
  resolve(): void;
  reject(err: unknown): void;
}

export function journalPath(dir: string, gen: number): string {
  return join(dir, `journal.${gen}.log`);
}

/** fsync a directory so a created, renamed or removed entry in it survives a power loss. */
export async function syncDir(dir: string): Promise<void> {
  if (process.platform === 'win32') return; // directories cannot be opened for fsync there
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * The append-only journal of the file backend, with group commit: lines written while an
 * fsync is in flight are collected and made durable together by the next write + fdatasync,
 * so many concurrent writers cost one fsync per batch rather than one each. A write's promise
 * resolves only once its line is on disk.
 *
 * Batches are written strictly one after another, so only the last batch can be torn by a
 * crash. After a failed write or fsync the journal refuses all further writes (the page
 * cache state is unknown after a failed fsync, so retrying could ack lost data).
 */
export class Journal {
  private pending: string[] = [];
  private waiters: Waiter[] = [];
  private readonly exclusive: Array<{ run: () => Promise<void>; reject: (err: unknown) => void }> = [];
  private idleWaiters: Array<() => void> = [];
  private active = false;
  private scheduled = false;
  failure: CoreError | undefined;

  constructor(
    private fh: FileHandle,
    /** Generation number: the journal file is `journal.<gen>.log`. */
    public gen: number,
    /** Bytes in the current journal file. */
    public size: number,
    private readonly afterBatch: () => void,
  ) {}

  /** Open (creating if needed) the journal file of `gen` for appending, cut to `validLength` bytes. */
  static async openFile(dir: string, gen: number, validLength = 0): Promise<FileHandle> {
    const fh = await open(journalPath(dir, gen), 'a', 0o600);
    try {
      const { size } = await fh.stat();
      if (size > validLength) {
        // Drop a torn tail left by a crash before appending after it.
        await fh.truncate(validLength);
        await fh.sync();
      }
      await syncDir(dir);
      return fh;
    } catch (err) {
      await fh.close();
      throw err;
    }
  }

  /** Append one framed line; resolves once it is durable. */
  write(line: string): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<void>((resolve, reject) => {
      this.pending.push(line);
      this.waiters.push({ resolve, reject });
      this.kick();
    });
  }

  /**
   * Run `task` between two batches (no write in flight). Used by compaction to capture the
   * state and switch to a new journal file at one well-defined point of the line sequence.
   */
  runExclusive(task: () => Promise<void>): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<void>((resolve, reject) => {
      this.exclusive.push({ run: () => task().then(resolve, reject), reject });
      this.kick();
    });
  }

  /** Switch to a new journal file; only call from inside runExclusive. */
  async switchTo(fh: FileHandle, gen: number): Promise<void> {
    const old = this.fh;
    this.fh = fh;
    this.gen = gen;
    this.size = 0;
    await old.close();
  }

  /** Resolves when everything written so far is durable and nothing is in flight. */
  flush(): Promise<void> {
    if (!this.active && !this.scheduled) return Promise.resolve();
    return new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  async close(): Promise<void> {
    await this.flush();
    await this.fh.close();
  }

  private kick(): void {
    if (this.active || this.scheduled) return;
    this.scheduled = true;
    // Deferring to setImmediate lets every caller of the current tick join the first batch.
    setImmediate(() => {
      this.scheduled = false;
      void this.loop();
    });
  }

  private async loop(): Promise<void> {
    this.active = true;
    try {
      for (;;) {
        const task = this.exclusive.shift();
        if (task) {
          await task.run();
          continue;
        }
        if (this.pending.length === 0 || this.failure) break;
        const data = Buffer.from(this.pending.join(''), 'utf8');
        const waiters = this.waiters;
        this.pending = [];
        this.waiters = [];
        try {
          await writeAll(this.fh, data);
          await this.fh.datasync();
          this.size += data.length;
        } catch (err) {
          this.fail(err, waiters);
          break;
        }
        for (const w of waiters) w.resolve();
        this.afterBatch();
      }
    } finally {
      this.active = false;
      const idle = this.idleWaiters;
      this.idleWaiters = [];
      for (const resolve of idle) resolve();
    }
  }

  private fail(cause: unknown, inFlight: Waiter[]): void {
    this.failure = new CoreError('UNAVAILABLE', 'storage unavailable', { cause });
    for (const w of [...inFlight, ...this.waiters]) w.reject(this.failure);
    this.pending = [];
    this.waiters = [];
    for (const task of this.exclusive.splice(0)) task.reject(this.failure);
  }
}

async function writeAll(fh: FileHandle, data: Buffer): Promise<void> {
  let offset = 0;
  while (offset < data.length) {
    const { bytesWritten } = await fh.write(data, offset, data.length - offset, null);
    offset += bytesWritten;
  }
}
