import { constants, type BigIntStats, type Dirent } from 'node:fs';
import { lstat, mkdir, open, realpath, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { WorkspaceConfig } from '../../config/sections/workspaces.js';
import { CoreError } from '../../kernel/CoreError.js';
import { ChangedUnderfootError, fsCode, isMissing, openDirPin, openedInside, sameFile, type DirPin } from './DirPin.js';
import { PathPolicy } from './PathPolicy.js';
import { MAX_PATH_DEPTH, MAX_PATH_LENGTH, isSafeName, normalizeRelative } from './pathSyntax.js';

/** Read limit when a workspace sets no maxFileSize: readFile returns whole files in memory. */
export const DEFAULT_MAX_READ_BYTES = 50 * 1024 * 1024;

const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** Every rule violation looks the same; `details` only for facts about allowed files or the workspace. */
function denied(details?: Record<string, unknown>): CoreError {
  return new CoreError('ACCESS_DENIED', 'access denied', details ? { details } : {});
}
const notFound = () => new CoreError('NOT_FOUND', 'not found');

type Child =
  | { state: 'absent' }
  | { state: 'dangling' }
  | { state: 'present'; path: string; real: string; realRel: string; stat: BigIntStats; viaLink: boolean };

export interface OpenedFile {
  handle: FileHandle;
  size: number;
  rel: string;
}

/** Where writeFile puts the file: a pinned parent directory and the final name inside it. */
export interface WriteTarget {
  parent: DirPin;
  name: string;
  rel: string;
  /** Permission bits of the file being replaced, kept by the atomic rename. */
  mode: number | undefined;
}

/** A directory entry that passed every rule, as listFiles sees it. */
export interface AdmittedEntry {
  rel: string;
  name: string;
  kind: 'file' | 'dir';
  /** Set when the entry is a followed symlink: what it resolves to. */
  link?: { real: string; realRel: string; stat: BigIntStats };
}

/**
 * Map low-level failures: races and OS refusals become 'access denied', the rest stays opaque
 * (fs messages carry absolute paths, which must not reach callers).
 */
export function toCoreError(err: unknown): CoreError {
  if (err instanceof CoreError) return err;
  if (err instanceof ChangedUnderfootError) return denied();
  const code = fsCode(err);
  if (code === 'EACCES' || code === 'EPERM' || code === 'ELOOP' || code === 'ENAMETOOLONG') return denied();
  if (isMissing(err)) return notFound();
  return new CoreError('INTERNAL', 'file operation failed', { cause: err });
}

const depthOf = (rel: string) => {
  let n = 1;
  for (let i = rel.indexOf('/'); i !== -1; i = rel.indexOf('/', i + 1)) n++;
  return n;
};
const join = (dir: string, name: string) => (dir === '' ? name : `${dir}/${name}`);
const joinAbs = (dir: string, name: string) => (dir === '/' ? `/${name}` : `${dir}/${name}`);

/**
 * The one place the six workspace rules are enforced. Every file operation (list, exists,
 * read, write, watch events) goes through these methods, and nothing else touches the disk:
 *
 * 1. containment: lexical checks (pathSyntax), then every component is looked up inside a
 *    directory opened and checked before (DirPin), so the real location is always the root
 *    plus checked names; followed links must resolve (realpath) to `root` or below `root + '/'`;
 * 2. readOnly refuses writes; 3–4. PathPolicy on the requested and on the resolved path;
 * 5. size limits on read (stat and the opened file) and on write (decoded bytes);
 * 6. symlinks: any symlink component is refused unless followSymlinks, writes through dangling
 *    links are refused, and files are opened with O_NOFOLLOW and checked by dev/ino.
 *
 * Lexical checks come first, so a refusal never depends on whether a blocked path exists.
 */
export class PathGuard {
  readonly policy: PathPolicy;

  constructor(readonly config: WorkspaceConfig) {
    this.policy = new PathPolicy(config);
  }

  /** Rule 1 (lexical): the normalised relative path, `''` for the root. */
  relative(input: string): string {
    const rel = normalizeRelative(input);
    if (rel === null) throw denied();
    return rel;
  }

  /** The real path of the workspace root; it must be an existing directory. */
  async root(): Promise<string> {
    try {
      const real = await realpath(this.config.path);
      if ((await stat(real)).isDirectory()) return real;
    } catch {
      // fall through: a missing or unreadable root is reported the same way
    }
    throw new CoreError('UNAVAILABLE', 'workspace is not accessible');
  }

  private checkSize(size: number | bigint): void {
    const max = this.config.maxFileSize ?? DEFAULT_MAX_READ_BYTES;
    if (BigInt(size) > BigInt(max)) throw denied({ reason: 'file too large', maxFileSize: max });
  }

  /** Rule 6 for one symlink: refused unless followed; its target must resolve inside the root. */
  private async followLink(linkPath: string, root: string): Promise<{ real: string; realRel: string; stat: BigIntStats } | null> {
    if (!this.config.followSymlinks) throw denied();
    let real: string;
    try {
      real = await realpath(linkPath);
    } catch (err) {
      if (isMissing(err) || fsCode(err) === 'ELOOP') return null; // dangling or a loop
      throw err;
    }
    const inside = real === root || real.startsWith(root === '/' ? '/' : root + '/');
    if (!inside) throw denied();
    return {
      real,
      realRel: real === root ? '' : real.slice(root.length + (root === '/' ? 0 : 1)),
      stat: await stat(real, { bigint: true }),
    };
  }

  /** Look up one name inside a pinned directory (lstat; links resolved per rule 6). */
  private async child(pin: DirPin, name: string, root: string): Promise<Child> {
    const p = `${pin.base}/${name}`;
    let st: BigIntStats;
    try {
      st = await lstat(p, { bigint: true });
    } catch (err) {
      if (isMissing(err)) return { state: 'absent' };
      throw err;
    }
    if (st.isSymbolicLink()) {
      const target = await this.followLink(p, root);
      if (!target) return { state: 'dangling' };
      return { state: 'present', path: target.real, ...target, viaLink: true };
    }
    return { state: 'present', path: p, real: joinAbs(pin.real, name), realRel: join(pin.realRel, name), stat: st, viaLink: false };
  }

  /** Open a child directory as a new pin. */
  private async enter(pin: DirPin, name: string, root: string): Promise<DirPin | 'absent' | 'dangling' | 'notdir'> {
    const c = await this.child(pin, name, root);
    if (c.state !== 'present') return c.state;
    if (!c.stat.isDirectory()) return 'notdir';
    return this.pinChild(c, root);
  }

  /**
   * Open a checked child directory. One reached through a followed link is opened by its real
   * path, whose folders are not pinned: it must turn out to lie inside the root (openedInside),
   * so a folder on that path swapped for a link to outside after the check is refused.
   */
  private async pinChild(c: Extract<Child, { state: 'present' }>, root: string): Promise<DirPin> {
    try {
      return await openDirPin(c.path, c.real, c.realRel, c.stat, c.viaLink ? root : undefined);
    } catch (err) {
      // Checked as a directory a moment ago, now a symlink or gone: someone is racing us.
      if (err instanceof ChangedUnderfootError || ['ELOOP', 'ENOTDIR', 'ENOENT'].includes(fsCode(err) ?? ''))
        throw new ChangedUnderfootError();
      throw err;
    }
  }

  /**
   * Pin the directory at `segments` below the root. `missing`: what a missing directory is: made
   * ('create', writes; a dangling link or a file in the way is then refused as such), or not found
   * ('not-found', reads).
   */
  private async walkDirs(root: string, segments: string[], missing: 'create' | 'not-found'): Promise<DirPin> {
    const create = missing === 'create';
    let pin = await openDirPin(root, root, '');
    try {
      for (const seg of segments) {
        let next = await this.enter(pin, seg, root);
        if (next === 'absent' && create) {
          try {
            await mkdir(`${pin.base}/${seg}`, 0o777);
          } catch (err) {
            if (fsCode(err) !== 'EEXIST') throw err;
          }
          next = await this.enter(pin, seg, root);
        }
        if (next === 'dangling' && create) throw denied();
        if (next === 'notdir' && create) throw new CoreError('BAD_REQUEST', 'a parent of the path is not a directory');
        if (typeof next === 'string') throw notFound();
        await pin.close();
        pin = next;
      }
      return pin;
    } catch (err) {
      await pin.close();
      throw err;
    }
  }

  private async guarded<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw toCoreError(err);
    }
  }

  /** pathExists: the entry when it exists and is reachable by the rules, else null. */
  inspect(input: string): Promise<{ rel: string; kind: 'file' | 'dir' } | null> {
    return this.guarded(async () => {
      const rel = this.relative(input);
      // Refuse up front only what no kind of entry could reach, so the answer never depends on the disk.
      if (!this.policy.fileAllowed(rel) && !this.policy.dirAllowed(rel)) throw denied();
      const root = await this.root();
      if (rel === '') return { rel, kind: 'dir' };
      const segments = rel.split('/');
      const name = segments.pop() as string;
      let parent: DirPin;
      try {
        parent = await this.walkDirs(root, segments, 'not-found');
      } catch (err) {
        if (err instanceof CoreError && err.appCode === 'NOT_FOUND') return null;
        throw err;
      }
      try {
        const c = await this.child(parent, name, root);
        if (c.state !== 'present') return null;
        // An entry the rules hide does not exist for the caller (listFiles hides it too).
        if (c.stat.isDirectory()) return this.policy.dirAllowed(rel) && this.policy.dirAllowed(c.realRel) ? { rel, kind: 'dir' } : null;
        if (c.stat.isFile()) return this.policy.fileAllowed(rel) && this.policy.fileAllowed(c.realRel) ? { rel, kind: 'file' } : null;
        return null;
      } finally {
        await parent.close();
      }
    });
  }

  /** readFile: open a regular file for reading, verified to be the object that was checked. */
  openFile(input: string): Promise<OpenedFile> {
    return this.guarded(async () => {
      const rel = this.relative(input);
      if (!this.policy.fileAllowed(rel)) throw denied();
      const root = await this.root();
      const segments = rel.split('/');
      const name = segments.pop() as string;
      const parent = await this.walkDirs(root, segments, 'not-found');
      try {
        const c = await this.child(parent, name, root);
        if (c.state !== 'present') throw notFound();
        if (!this.policy.fileAllowed(c.realRel)) throw denied();
        if (c.stat.isDirectory()) throw new CoreError('BAD_REQUEST', 'path is a directory');
        if (!c.stat.isFile()) throw denied();
        this.checkSize(c.stat.size);
        const handle = await open(c.path, READ_FLAGS);
        try {
          const opened = await handle.stat({ bigint: true });
          if (!opened.isFile() || !sameFile(opened, c.stat)) throw new ChangedUnderfootError();
          // Reached through a followed link (opened by its real path): it must be inside the root.
          if (c.viaLink && !(await openedInside(handle.fd, root))) throw new ChangedUnderfootError();
          this.checkSize(opened.size);
          return { handle, size: Number(opened.size), rel };
        } catch (err) {
          await handle.close();
          throw err;
        }
      } finally {
        await parent.close();
      }
    });
  }

  /**
   * writeFile: check rules 1–6 for a write of `size` bytes, create missing parent directories
   * (each one inside a checked directory) and return the pinned directory to write into.
   * The caller must close `parent`.
   */
  prepareWrite(input: string, size: number): Promise<WriteTarget> {
    return this.guarded(async () => {
      const rel = this.relative(input);
      if (this.config.readOnly) throw denied({ reason: 'workspace is read-only' });
      if (!this.policy.fileAllowed(rel)) throw denied();
      this.checkSize(size);
      const root = await this.root();
      const segments = rel.split('/');
      const name = segments.pop() as string;
      const parent = await this.walkDirs(root, segments, 'create');
      try {
        const c = await this.child(parent, name, root);
        if (c.state === 'dangling') throw denied();
        if (c.state === 'absent') {
          if (!this.policy.fileAllowed(join(parent.realRel, name))) throw denied();
          return { parent, name, rel, mode: undefined };
        }
        if (!this.policy.fileAllowed(c.realRel)) throw denied();
        if (c.stat.isDirectory()) throw new CoreError('BAD_REQUEST', 'path is a directory');
        if (!c.stat.isFile()) throw denied();
        const mode = Number(c.stat.mode & 0o777n);
        if (!c.viaLink) return { parent, name, rel, mode };
        // A followed link inside the root: replace its target, in the target's own directory.
        const dir = path.dirname(c.real);
        const dirRel = path.dirname(c.realRel) === '.' ? '' : path.dirname(c.realRel);
        const targetParent = await openDirPin(dir, dir, dirRel, await lstat(dir, { bigint: true }), root);
        await parent.close();
        return { parent: targetParent, name: path.basename(c.real), rel, mode };
      } catch (err) {
        await parent.close();
        throw err;
      }
    });
  }

  /** listFiles: pin the directory to list. */
  openDir(input: string): Promise<{ pin: DirPin; rel: string; root: string }> {
    return this.guarded(async () => {
      const rel = this.relative(input);
      if (!this.policy.dirAllowed(rel)) throw denied();
      const root = await this.root();
      const segments = rel === '' ? [] : rel.split('/');
      const last = segments.pop();
      const parent = await this.walkDirs(root, segments, 'not-found');
      if (last === undefined) return { pin: parent, rel, root };
      try {
        const c = await this.child(parent, last, root);
        if (c.state !== 'present') throw notFound();
        if (!c.stat.isDirectory()) {
          // Say "not a directory" only about files the caller may see; others do not exist for it.
          const visible = c.stat.isFile() && this.policy.fileAllowed(rel) && this.policy.fileAllowed(c.realRel);
          throw visible ? new CoreError('BAD_REQUEST', 'path is not a directory') : notFound();
        }
        if (!this.policy.dirAllowed(c.realRel)) throw denied();
        return { pin: await this.pinChild(c, root), rel, root };
      } finally {
        await parent.close();
      }
    });
  }

  /**
   * listFiles, per entry: the same rules, cheaply (no syscall for plain entries unless a
   * maxFileSize is set). Null when the entry must not be listed.
   */
  async admit(parent: DirPin, parentRel: string, dirent: Dirent, root: string): Promise<AdmittedEntry | null> {
    const name = dirent.name;
    if (!isSafeName(name)) return null;
    const rel = join(parentRel, name);
    // Listed paths are ones readFile accepts (rule 1's length and depth limits).
    if (rel.length > MAX_PATH_LENGTH || depthOf(rel) > MAX_PATH_DEPTH) return null;
    let kind: 'file' | 'dir';
    let realRel = join(parent.realRel, name);
    let link: AdmittedEntry['link'];
    if (dirent.isSymbolicLink()) {
      if (!this.config.followSymlinks) return null;
      const c = await this.child(parent, name, root).catch(() => null);
      if (c?.state !== 'present') return null;
      if (!c.stat.isDirectory() && !c.stat.isFile()) return null;
      kind = c.stat.isDirectory() ? 'dir' : 'file';
      realRel = c.realRel;
      link = { real: c.real, realRel: c.realRel, stat: c.stat };
    } else if (dirent.isDirectory()) kind = 'dir';
    else if (dirent.isFile()) kind = 'file';
    else return null;

    if (kind === 'dir') return this.policy.dirAllowed(rel) && this.policy.dirAllowed(realRel) ? { rel, name, kind, link } : null;
    if (!this.policy.fileAllowed(rel) || !this.policy.fileAllowed(realRel)) return null;
    if (this.config.maxFileSize !== undefined) {
      const size = link
        ? link.stat.size
        : await lstat(`${parent.base}/${name}`, { bigint: true }).then(
            (s) => s.size,
            () => null,
          );
      if (size === null || size > BigInt(this.config.maxFileSize)) return null;
    }
    return { rel, name, kind, link };
  }

  /** listFiles, recursion: pin an admitted directory; null when it cannot be entered safely. */
  async enterAdmitted(parent: DirPin, entry: AdmittedEntry, root: string): Promise<DirPin | null> {
    try {
      if (entry.link) return await openDirPin(entry.link.real, entry.link.real, entry.link.realRel, entry.link.stat, root);
      const next = await this.enter(parent, entry.name, root);
      return typeof next === 'string' ? null : next;
    } catch {
      return null;
    }
  }
}
