import { EventEmitter } from 'node:events';
import { watch } from 'node:fs';
import type { Logger } from '../../kernel/Logger.js';
import type { PathGuard } from './PathGuard.js';
import { normalizeRelative } from './pathSyntax.js';
import { MAX_WATCHED_DIRS, watchTree } from './watchTree.js';

/**
 * macOS (FSEvents) and Windows watch a tree natively. Elsewhere (Linux) Node emulates
 * `recursive: true` at a cost quadratic in a folder's size, so watchTree is used instead.
 */
/** Changes waiting for their guard check, and checks running at once (see enqueue). */
const MAX_PENDING = 10_000;
const REPORT_CONCURRENCY = 4;

const NATIVE_RECURSIVE = process.platform === 'darwin' || process.platform === 'win32';

/** A change noticed in a watched workspace. */
export interface WorkspaceChange {
  workspaceId: string;
  /** Relative path inside the workspace. */
  path: string;
  /** fs.watch's kind: `rename` (created, deleted, moved) or `change` (content). */
  event: 'rename' | 'change';
}

/**
 * enableWatching: one recursive watch per workspace (on Linux one inotify watch per folder,
 * watchTree).
 * Only changes to paths the workspace's rules let a caller see are reported, so a watcher
 * never reveals blocked names or anything reached through a link it may not follow.
 */
export class WorkspaceWatcher {
  private readonly watchers = new Map<string, { close(): void }>();
  private readonly pending = new Map<string, { workspaceId: string; guard: PathGuard; event: string; filename: string }>();
  private running = 0;
  private overflowWarned = false;
  private readonly emitter = new EventEmitter();

  constructor(private readonly logger: Logger) {
    // Listeners are MCP sessions and caches; many is normal.
    this.emitter.setMaxListeners(0);
  }

  onChange(listener: (change: WorkspaceChange) => void): () => void {
    this.emitter.on('change', listener);
    return () => this.emitter.off('change', listener);
  }

  async add(workspaceId: string, guard: PathGuard): Promise<void> {
    if (this.watchers.has(workspaceId)) return;
    let root: string;
    try {
      root = await guard.root();
    } catch {
      this.logger.warn('workspace not watched: folder not accessible', { workspaceId });
      return;
    }
    const report = (event: string, filename: string) => this.enqueue(workspaceId, guard, event, filename);
    try {
      if (NATIVE_RECURSIVE) {
        const w = watch(root, { recursive: true, persistent: false }, (event, filename) => filename && report(event, filename.toString()));
        w.on('error', (err) => {
          this.logger.warn('workspace watcher stopped', { workspaceId, error: err.message });
          this.remove(workspaceId);
        });
        this.watchers.set(workspaceId, w);
      } else {
        const enter = (rel: string) => normalizeRelative(rel) === rel && guard.policy.dirAllowed(rel);
        const onLimit = () => this.logger.warn('workspace watcher: folder limit reached', { workspaceId, maxFolders: MAX_WATCHED_DIRS });
        const tree = watchTree(root, report, { enter, onLimit });
        this.watchers.set(workspaceId, tree);
        await tree.ready;
      }
    } catch (err) {
      this.logger.warn('workspace not watched', { workspaceId, error: err instanceof Error ? err.message : String(err) });
    }
  }

  /**
   * Each event is checked by the guard (a few file system calls, open folders). Thousands of
   * files created at once must not start thousands of checks together (they exhausted the file
   * descriptors and queued every file procedure behind them): a path waiting for its check is
   * not queued twice, at most MAX_PENDING wait, and REPORT_CONCURRENCY run at a time.
   */
  private enqueue(workspaceId: string, guard: PathGuard, event: string, filename: string): void {
    const key = `${workspaceId}\0${filename}`;
    const waiting = this.pending.get(key);
    if (waiting) {
      if (event === 'rename') waiting.event = 'rename';
      return;
    }
    if (this.pending.size >= MAX_PENDING) {
      if (!this.overflowWarned) this.logger.warn('workspace watcher: too many changes at once, some not reported', { workspaceId });
      this.overflowWarned = true;
      return;
    }
    this.pending.set(key, { workspaceId, guard, event, filename });
    this.pump();
  }

  private pump(): void {
    while (this.running < REPORT_CONCURRENCY) {
      const next = this.pending.entries().next();
      if (next.done) return;
      const [key, job] = next.value;
      this.pending.delete(key);
      this.running++;
      void this.report(job.workspaceId, job.guard, job.event, job.filename).finally(() => {
        this.running--;
        if (this.pending.size === 0) this.overflowWarned = false;
        this.pump();
      });
    }
  }

  private async report(workspaceId: string, guard: PathGuard, event: string, filename: string): Promise<void> {
    try {
      const found = await guard.inspect(filename);
      // Gone entries cannot be inspected: report them when a file at that path would be reachable.
      if (found === null && !guard.policy.fileAllowed(guard.relative(filename))) return;
      const path = found?.rel ?? guard.relative(filename);
      this.emitter.emit('change', { workspaceId, path, event: event === 'change' ? 'change' : 'rename' } satisfies WorkspaceChange);
    } catch {
      // refused by the rules (or the root went away): not reported
    }
  }

  remove(workspaceId: string): void {
    this.watchers.get(workspaceId)?.close();
    this.watchers.delete(workspaceId);
    for (const [key, job] of this.pending) if (job.workspaceId === workspaceId) this.pending.delete(key);
  }

  /** Whether a workspace is being watched. */
  has(workspaceId: string): boolean {
    return this.watchers.has(workspaceId);
  }

  close(): void {
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
    this.pending.clear();
    this.emitter.removeAllListeners();
  }
}
