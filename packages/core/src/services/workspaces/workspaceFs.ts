import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { open, readdir, rename, unlink } from 'node:fs/promises';
import { CoreError } from '../../kernel/CoreError.js';
import type { DirPin } from './DirPin.js';
import { toCoreError, type AdmittedEntry, type PathGuard } from './PathGuard.js';

/**
 * The four file operations of a server workspace. Each one goes through its PathGuard for
 * every path it touches; nothing here resolves a path on its own.
 */

/** `binary` is a latin1 string: one character per byte (code points 0–255). */
export type FileEncoding = 'utf8' | 'base64' | 'binary';

/** listFiles refuses listings longer than this (list a subdirectory instead). */
export const MAX_LIST_ENTRIES = 100_000;
/** listFiles does not descend deeper than this many levels. */
export const MAX_LIST_DEPTH = 128;

export interface ListOptions {
  /** Descend into subdirectories. */
  recursive: boolean;
  /** Include directories in the result (with a trailing `/`). */
  includeDirectories: boolean;
  /** Cap on the number of entries. Default MAX_LIST_ENTRIES. */
  maxEntries?: number;
  /** Stop early when the request goes away (checked once per folder). */
  signal?: AbortSignal;
}

const ADMIT_BATCH = 256;

const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * Paths relative to the workspace root (directories end with `/`), depth first, sorted by
 * name. Entries the rules would refuse to read are left out.
 */
export async function listFiles(guard: PathGuard, input: string, opts: ListOptions): Promise<string[]> {
  const max = opts.maxEntries ?? MAX_LIST_ENTRIES;
  const { pin, rel, root } = await guard.openDir(input);
  const out: string[] = [];
  // Followed links can form loops: never enter a directory that is already being listed
  // further up (the same folder reached through two links is listed under both names).
  const ancestors = new Set<string>([`${pin.stat.dev}:${pin.stat.ino}`]);
  // The entries read, listed or not: followed links that fan out without a loop (two links to
  // the next folder, at every level) would make the work grow exponentially while the answer,
  // without directories, stays empty. Twice the answer's cap bounds it.
  let visited = 0;

  const walk = async (dir: DirPin, dirRel: string, depth: number): Promise<void> => {
    if (opts.signal?.aborted) throw new CoreError('CANCELLED', 'request cancelled');
    let dirents;
    try {
      dirents = await readdir(dir.base, { withFileTypes: true });
    } catch (err) {
      if (depth === 0) throw toCoreError(err);
      return; // an unreadable subdirectory contributes nothing
    }
    visited += dirents.length;
    if (visited > 2 * max) {
      throw new CoreError('PAYLOAD_TOO_LARGE', `listing reads more than ${2 * max} entries; list a subdirectory or without recursion`);
    }
    dirents.sort(byName);
    // Admit in batches: the checks that need a syscall (links, maxFileSize) run concurrently.
    const admitted: Array<AdmittedEntry | null> = [];
    for (let i = 0; i < dirents.length; i += ADMIT_BATCH) {
      admitted.push(...(await Promise.all(dirents.slice(i, i + ADMIT_BATCH).map((d) => guard.admit(dir, dirRel, d, root)))));
    }
    for (const entry of admitted) {
      if (!entry) continue;
      if (entry.kind === 'file' || opts.includeDirectories) {
        if (out.length >= max) {
          throw new CoreError('PAYLOAD_TOO_LARGE', `listing has more than ${max} entries; list a subdirectory or without recursion`);
        }
        out.push(entry.kind === 'dir' ? entry.rel + '/' : entry.rel);
      }
      if (entry.kind !== 'dir' || !opts.recursive || depth + 1 >= MAX_LIST_DEPTH) continue;
      const child = await guard.enterAdmitted(dir, entry, root);
      if (!child) continue;
      try {
        const key = `${child.stat.dev}:${child.stat.ino}`;
        if (ancestors.has(key)) continue;
        ancestors.add(key);
        await walk(child, entry.rel, depth + 1);
        ancestors.delete(key);
      } finally {
        await child.close();
      }
    }
  };

  try {
    await walk(pin, rel, 0);
  } finally {
    await pin.close();
  }
  return out;
}

export interface ReadResult {
  content: string;
  size: number;
  encoding: FileEncoding;
  mimeType: string;
}

export async function readFile(guard: PathGuard, input: string, encoding: FileEncoding): Promise<ReadResult> {
  const { handle, size, rel } = await guard.openFile(input);
  try {
    // Read at most the size that was checked: a file growing meanwhile cannot exceed the limit.
    const buf = Buffer.alloc(size);
    let filled = 0;
    while (filled < size) {
      const { bytesRead } = await handle.read(buf, filled, size - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    const data = filled === size ? buf : buf.subarray(0, filled);
    return { content: encode(data, encoding), size: data.length, encoding, mimeType: await mimeTypeOf(rel) };
  } catch (err) {
    throw toCoreError(err);
  } finally {
    await handle.close();
  }
}

export interface WriteResult {
  success: true;
  path: string;
  size: number;
}

/**
 * Atomic write: a temporary file in the same (pinned) directory, fsync, rename over the
 * target, fsync the directory. Readers see the old or the new content, never a mix.
 */
export async function writeFile(guard: PathGuard, input: string, content: string, encoding: FileEncoding): Promise<WriteResult> {
  const data = decode(content, encoding);
  const target = await guard.prepareWrite(input, data.length);
  const tmp = `${target.parent.base}/.aib-${randomBytes(8).toString('hex')}.tmp`;
  let created = false;
  try {
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
    const fh = await open(tmp, flags, target.mode ?? 0o666);
    created = true;
    try {
      await fh.writeFile(data);
      if (target.mode !== undefined) await fh.chmod(target.mode); // keep the replaced file's permissions
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, `${target.parent.base}/${target.name}`);
    created = false;
    await target.parent.sync();
    return { success: true, path: target.rel, size: data.length };
  } catch (err) {
    if (created) await unlink(tmp).catch(() => undefined);
    throw toCoreError(err);
  } finally {
    await target.parent.close();
  }
}

export async function pathExists(guard: PathGuard, input: string): Promise<{ exists: boolean; path: string }> {
  const found = await guard.inspect(input);
  return { exists: found !== null, path: guard.relative(input) };
}

/** mime-types holds the whole MIME database (about 5 MB of RSS): loaded on the first read. */
let mimeTypes: Promise<typeof import('mime-types')> | undefined;

export async function mimeTypeOf(rel: string): Promise<string> {
  const mime = await (mimeTypes ??= import('mime-types'));
  return mime.lookup(rel) || 'application/octet-stream';
}

function encode(data: Buffer, encoding: FileEncoding): string {
  return data.toString(encoding === 'binary' ? 'latin1' : encoding);
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Decode writeFile content; malformed input is refused rather than silently altered. */
export function decode(content: string, encoding: FileEncoding): Buffer {
  if (encoding === 'utf8') return Buffer.from(content, 'utf8');
  if (encoding === 'base64') {
    const compact = content.replace(/[\r\n\t ]+/g, '');
    if (!BASE64.test(compact)) throw new CoreError('BAD_REQUEST', 'content is not valid base64');
    return Buffer.from(compact, 'base64');
  }
  // latin1 would silently drop the high byte of characters above U+00FF.
  if (/[^\u0000-\u00ff]/.test(content)) throw new CoreError('BAD_REQUEST', 'binary content must only contain characters U+0000 to U+00FF');
  return Buffer.from(content, 'latin1');
}
