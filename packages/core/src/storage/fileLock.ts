import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { link, open, readFile, rename, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { CoreError } from '../errors/index.js';

/**
 * An exclusive lock on a data directory, so a second process can never open (and corrupt)
 * the same file store. The lock is a `LOCK` file holding the owner's pid, host and boot id.
 *
 * Why not proper-lockfile: its staleness is mtime based (10 s by default), so a restart right
 * after kill -9 would be refused. Here a lock is stale as soon as its owner is provably gone:
 * same host and the pid no longer runs, or the machine rebooted since (boot id changed).
 * A lock from another host is never taken over (shared network directories): the error says
 * which file to delete.
 */
export interface DirectoryLock {
  readonly path: string;
  /** Remove the lock if it is still ours. Idempotent. */
  release(): Promise<void>;
}

interface LockInfo {
  pid: number;
  hostname: string;
  bootId?: string;
  token: string;
  since: string;
}

const LOCK_FILE = 'LOCK';
/** Lock paths claimed by this process (held or being acquired). */
const claimed = new Set<string>();
/** Tokens of the locks this process holds, to tell our own lock from a previous process with our pid. */
const ourTokens = new Set<string>();

const bootId = ((): string | undefined => {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
})();

export async function lockDirectory(dir: string): Promise<DirectoryLock> {
  const path = join(dir, LOCK_FILE);
  if (claimed.has(path)) throw inUse(dir, path, 'this process (it is already open)');
  claimed.add(path);
  const me: LockInfo = { pid: process.pid, hostname: hostname(), bootId, token: randomUUID(), since: new Date().toISOString() };
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      if (await tryCreate(path, me)) {
        ourTokens.add(me.token);
        return { path, release: () => release(path, me.token) };
      }
      const holder = await readHolder(path);
      if (!holder) continue; // released between our attempt and the read
      if (!isStale(holder)) throw inUse(dir, path, describe(holder.info));
      await removeStale(path, holder.raw, me.token);
    }
    throw inUse(dir, path, 'another process (the lock kept changing hands)');
  } catch (err) {
    claimed.delete(path);
    throw err;
  }
}

/** Create the lock atomically with its full content: write a temp file, then link() it (fails if LOCK exists). */
async function tryCreate(path: string, me: LockInfo): Promise<boolean> {
  const temp = `${path}.${me.token}.tmp`;
  const fh = await open(temp, 'wx', 0o600);
  try {
    await fh.writeFile(JSON.stringify(me));
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await link(temp, path);
    return true;
  } catch (err) {
    if (errno(err) === 'EEXIST') return false;
    throw err;
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}

interface Holder {
  raw: string;
  info: LockInfo | undefined;
  mtimeMs: number;
}

async function readHolder(path: string): Promise<Holder | undefined> {
  try {
    const [raw, st] = await Promise.all([readFile(path, 'utf8'), stat(path)]);
    let info: LockInfo | undefined;
    try {
      const parsed = JSON.parse(raw) as Partial<LockInfo>;
      if (typeof parsed.pid === 'number' && typeof parsed.hostname === 'string' && typeof parsed.token === 'string') {
        info = parsed as LockInfo;
      }
    } catch {
      info = undefined;
    }
    return { raw, info, mtimeMs: st.mtimeMs };
  } catch (err) {
    if (errno(err) === 'ENOENT') return undefined;
    throw err;
  }
}

function isStale({ info, mtimeMs }: Holder): boolean {
  // Unreadable content cannot come from tryCreate (content is complete before link); treat an old one as debris.
  if (!info) return Date.now() - mtimeMs > 10_000;
  if (info.hostname !== hostname()) return false;
  if (bootId && info.bootId && info.bootId !== bootId) return true;
  if (info.pid === process.pid) return !ourTokens.has(info.token);
  return !pidAlive(info.pid);
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errno(err) === 'EPERM'; // exists, owned by another user
  }
}

/**
 * Move the stale lock aside and check that what we moved is what we judged stale. If another
 * process replaced it in between, put theirs back (link fails rather than overwrite).
 */
async function removeStale(path: string, staleRaw: string, token: string): Promise<void> {
  const aside = `${path}.${token}.stale`;
  try {
    await rename(path, aside);
  } catch (err) {
    if (errno(err) === 'ENOENT') return;
    throw err;
  }
  try {
    const moved = await readFile(aside, 'utf8');
    if (moved !== staleRaw) await link(aside, path).catch(() => undefined);
  } finally {
    await unlink(aside).catch(() => undefined);
  }
}

async function release(path: string, token: string): Promise<void> {
  if (!ourTokens.delete(token)) return;
  try {
    const holder = await readHolder(path);
    if (holder?.info?.token === token) await unlink(path);
  } finally {
    claimed.delete(path);
  }
}

function describe(info: LockInfo | undefined): string {
  return info ? `process ${info.pid} on ${info.hostname} (since ${info.since})` : 'another process';
}

function inUse(dir: string, lockPath: string, by: string): CoreError {
  return new CoreError(
    'CONFLICT',
    `file storage directory ${dir} is in use by ${by}; only one server may use it at a time. ` +
      `If no server is using it, delete ${lockPath}.`,
  );
}

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}
