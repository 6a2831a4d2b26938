import { EventEmitter } from 'node:events';
import { watch, type FSWatcher } from 'node:fs';
import type { Logger } from '../../kernel/Logger.js';
import type { PathGuard } from './PathGuard.js';

/** A change noticed in a watched workspace. */
export interface WorkspaceChange {
  workspaceId: string;
  /** Relative path inside the workspace. */
  path: string;
  /** fs.watch's kind: `rename` (created, deleted, moved) or `change` (content). */
  event: 'rename' | 'change';
}

/**
 * enableWatching: one recursive fs.watch per workspace (inotify on Linux, Node ≥ 20).
 * Only changes to paths the workspace's rules let a caller see are reported, so a watcher
 * never reveals blocked names or anything reached through a link it may not follow.
 */
export class WorkspaceWatcher {
  private readonly watchers = new Map<string, FSWatcher>();
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
    try {
      const w = watch(root, { recursive: true, persistent: false }, (event, filename) => {
        if (filename) void this.report(workspaceId, guard, event, filename.toString());
      });
      w.on('error', (err) => {
        this.logger.warn('workspace watcher stopped', { workspaceId, error: err.message });
        this.remove(workspaceId);
      });
      this.watchers.set(workspaceId, w);
    } catch (err) {
      this.logger.warn('workspace not watched', { workspaceId, error: err instanceof Error ? err.message : String(err) });
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
  }

  /** Whether a workspace is being watched. */
  has(workspaceId: string): boolean {
    return this.watchers.has(workspaceId);
  }

  close(): void {
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
    this.emitter.removeAllListeners();
  }
}
