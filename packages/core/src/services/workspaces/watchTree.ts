import { watch, type FSWatcher } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';

/** Folders one workspace watch follows at most (each is one inotify watch of the user's quota). */
export const MAX_WATCHED_DIRS = 8192;

export interface TreeWatchOptions {
  /** Whether to watch the folder at this relative path (rules, depth, safe names). */
  enter(rel: string): boolean;
  /** Called once when MAX_WATCHED_DIRS is reached; deeper changes are then not seen. */
  onLimit(): void;
}

export interface TreeWatch {
  /** Settles once the folders that existed at the start are watched. */
  ready: Promise<void>;
  close(): void;
}

const join = (dir: string, name: string) => (dir === '' ? name : `${dir}/${name}`);

/**
 * Recursive watching with one non-recursive fs.watch (inotify watch) per folder. Node's own
 * `recursive: true` on Linux re-reads a whole folder synchronously on every change inside it and
 * watches every file: creating 2,000 files in one folder held the event loop for 17 s. Here an
 * event costs at most one asynchronous lstat (is the name a new folder?), and files need no watch.
 * Links are never entered. `onEvent` gets paths relative to `root`.
 */
export function watchTree(root: string, onEvent: (event: 'rename' | 'change', rel: string) => void, opts: TreeWatchOptions): TreeWatch {
  const dirs = new Map<string, { w: FSWatcher; ino: bigint }>();
  let closed = false;
  let limited = false;

  const removeTree = (rel: string) => {
    for (const [d, { w }] of dirs) {
      if (rel === '' || d === rel || d.startsWith(`${rel}/`)) {
        w.close();
        dirs.delete(d);
      }
    }
  };

  const handle = (dirRel: string, event: string, name: string, ino: bigint) => {
    if (closed) return;
    const abs = dirRel === '' ? root : `${root}/${dirRel}`;
    // A watched folder that is moved or deleted reports itself, under its own name: not a child.
    if (name === abs.slice(abs.lastIndexOf('/') + 1)) {
      // Only the watch of that folder goes; a new folder of the same name may be watched already.
      const forget = () => (dirs.get(dirRel)?.ino === ino ? removeTree(dirRel) : undefined);
      lstat(abs, { bigint: true }).then((st) => (st.ino === ino ? report(dirRel, event, name) : forget()), forget);
      return;
    }
    report(dirRel, event, name);
  };

  const report = (dirRel: string, event: string, name: string) => {
    const rel = join(dirRel, name);
    onEvent(event === 'change' ? 'change' : 'rename', rel);
    if (event !== 'rename') return;
    // Created, deleted or moved: a new folder is watched, a gone one forgotten.
    lstat(`${root}/${rel}`, { bigint: true }).then(
      (st) => {
        if (!st.isDirectory() || !opts.enter(rel)) return;
        // A folder replaced by another of the same name: watch the new one.
        if (dirs.has(rel) && dirs.get(rel)?.ino !== st.ino) removeTree(rel);
        return add(rel);
      },
      () => (dirs.has(rel) ? removeTree(rel) : undefined),
    );
  };

  const add = async (rel: string): Promise<void> => {
    if (closed || dirs.has(rel)) return;
    if (dirs.size >= MAX_WATCHED_DIRS) {
      if (!limited) opts.onLimit();
      limited = true;
      return;
    }
    const abs = rel === '' ? root : `${root}/${rel}`;
    let w: FSWatcher;
    let ino: bigint;
    try {
      ino = (await lstat(abs, { bigint: true })).ino;
      if (closed || dirs.has(rel)) return;
      w = watch(abs, { persistent: false }, (event, name) => name && handle(rel, event, name.toString(), ino));
    } catch {
      return; // gone or unreadable meanwhile
    }
    w.on('error', () => removeTree(rel));
    dirs.set(rel, { w, ino });
    // Listed after the watch starts, so a folder created meanwhile is seen one way or the other.
    let entries;
    try {
      entries = await readdir(abs, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const child = join(rel, e.name);
      if (e.isDirectory() && opts.enter(child)) await add(child);
    }
  };

  return {
    ready: add(''),
    close() {
      closed = true;
      for (const { w } of dirs.values()) w.close();
      dirs.clear();
    },
  };
}
