import { constants, existsSync, type BigIntStats } from 'node:fs';
import { open, readlink, stat as fsStat, type FileHandle } from 'node:fs/promises';

/**
 * An open handle on a checked directory. Later lookups go through `base`, which on Linux is
 * `/proc/self/fd/<fd>`: the kernel resolves it to the directory we opened and checked, even if
 * that path is renamed or replaced by a symlink afterwards (an `openat` for Node). Elsewhere
 * `base` is the real path, and only the dev/ino checks narrow the window.
 */
export interface DirPin {
  /** Prefix for lookups of names inside this directory. */
  readonly base: string;
  /** The real path the directory had when it was checked. */
  readonly real: string;
  /** Its relative path inside the workspace (`''` for the root), after resolving symlinks. */
  readonly realRel: string;
  readonly stat: BigIntStats;
  /** fsync the directory (makes a rename inside it durable). */
  sync(): Promise<void>;
  close(): Promise<void>;
}

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

let procFd: boolean | undefined;

/**
 * Whether `/proc/self/fd/<fd>` reaches the opened directory. Checked once, on a real handle:
 * some sandboxes mount /proc without it, and then lookups fall back to real paths.
 */
async function hasProcFd(fd: number, opened: BigIntStats): Promise<boolean> {
  if (procFd === undefined) {
    if (process.platform !== 'linux' || !existsSync('/proc/self/fd')) procFd = false;
    else
      procFd = await fsStat(`/proc/self/fd/${fd}`, { bigint: true }).then(
        (s) => sameFile(s, opened),
        () => false,
      );
  }
  return procFd;
}

/** Thrown when what was opened is not what was checked (a race, or a symlink swapped in). */
export class ChangedUnderfootError extends Error {
  constructor() {
    super('path changed while it was being checked');
    this.name = 'ChangedUnderfootError';
  }
}

/** Same file system object: compared on device and inode, as bigints (inodes can exceed 2^53). */
export function sameFile(a: BigIntStats, b: BigIntStats): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/**
 * Whether the object open on `fd` is inside `root` (or is it), by the path the kernel gives it
 * now (Linux `/proc/self/fd/<fd>`): what a file or directory reached through a followed link
 * turned out to be, whatever was swapped on the way to it after it was checked. True where the
 * kernel cannot say (no /proc): the dev/ino checks are all there is then.
 */
export async function openedInside(fd: number, root: string): Promise<boolean> {
  if (process.platform !== 'linux') return true;
  let actual: string;
  try {
    actual = await readlink(`/proc/self/fd/${fd}`);
  } catch {
    return true;
  }
  return actual === root || actual.startsWith(root === '/' ? '/' : `${root}/`);
}

/**
 * Open `path` as a directory without following a final symlink. When `expected` is given, the
 * opened directory must be that object (dev/ino), and with `within` (a root) it must lie inside
 * it by the path the kernel gives it (openedInside), otherwise ChangedUnderfootError.
 */
export async function openDirPin(path: string, real: string, realRel: string, expected?: BigIntStats, within?: string): Promise<DirPin> {
  const handle: FileHandle = await open(path, DIR_FLAGS);
  try {
    const stat = await handle.stat({ bigint: true });
    if (!stat.isDirectory() || (expected && !sameFile(stat, expected))) throw new ChangedUnderfootError();
    if (within !== undefined && !(await openedInside(handle.fd, within))) throw new ChangedUnderfootError();
    let closed = false;
    return {
      base: (await hasProcFd(handle.fd, stat)) ? `/proc/self/fd/${handle.fd}` : real,
      real,
      realRel,
      stat,
      sync: () => handle.sync(),
      async close() {
        if (closed) return;
        closed = true;
        await handle.close();
      },
    };
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/** Error code of a Node fs error, if it is one. */
export function fsCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string' ? err.code : undefined;
}

/** The error means "this path does not exist" (or a parent is not a directory). */
export function isMissing(err: unknown): boolean {
  const code = fsCode(err);
  return code === 'ENOENT' || code === 'ENOTDIR';
}
