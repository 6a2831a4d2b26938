import { constants } from 'node:fs';
import { access, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import type { ResolvedConfig } from '../../config/schema.js';
import { WorkspaceConfigSchema, type WorkspaceConfig, type WorkspaceConfigInput } from '../../config/sections/workspaces.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { Logger } from '../../kernel/Logger.js';
import { FAMILY_LISTED } from '../../kernel/ownerListings.js';
import type { Storage } from '../../kernel/Storage.js';
import { PathGuard } from './PathGuard.js';
import { WorkspaceWatcher, type WorkspaceChange } from './WorkspaceWatcher.js';
import * as wsfs from './workspaceFs.js';

/** Workspace ids: what getServerWorkspaces returns as keys and workspaceId accepts. */
export const WORKSPACE_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
/** Storage keys of workspaces added at run time. */
export const SERVER_WORKSPACE_KEY = FAMILY_LISTED.serverWorkspaces;

interface StoredWorkspace {
  config: WorkspaceConfig;
  addedAt: string;
  addedBy?: string;
}

interface Entry {
  id: string;
  config: WorkspaceConfig;
  source: 'config' | 'runtime';
  addedAt?: string;
}

/** One workspace as getServerWorkspaces shows it. */
export interface WorkspaceInfo {
  id: string;
  name: string;
  description?: string;
  /** Absolute folder: only shown to administrators. */
  path?: string;
  readOnly: boolean;
  followSymlinks: boolean;
  enableWatching: boolean;
  maxFileSize?: number;
  allowedExtensions?: string[];
  blockedExtensions?: string[];
  /** allowedPaths or blockedPaths are set (the patterns themselves are not shown). */
  hasPathRules: boolean;
  source: 'config' | 'runtime';
  isDefault: boolean;
  /** The folder exists and is readable by the server. */
  accessible: boolean;
  /** accessible, not readOnly, and writable by the server. */
  writable: boolean;
}

export interface MutationResult {
  success: boolean;
  id: string;
  message: string;
}

export type ServerWorkspacesSettings = ResolvedConfig['serverWorkspaces'];

/**
 * Server workspaces: the configured ones plus those added at run time (kept in storage under
 * `ws:server:<id>`, so every server sharing the storage sees them at once). Resolves a
 * workspaceId to its PathGuard and runs the file operations through it.
 */
export class WorkspaceService {
  private readonly guards = new Map<string, { key: string; guard: PathGuard }>();
  private readonly watcher: WorkspaceWatcher;

  constructor(
    private readonly settings: ServerWorkspacesSettings,
    private readonly storage: Storage,
    private readonly logger: Logger,
  ) {
    this.watcher = new WorkspaceWatcher(logger);
  }

  get enabled(): boolean {
    return this.settings.enabled;
  }

  /** Start watchers for workspaces with enableWatching (configured and stored). */
  async start(): Promise<void> {
    if (!this.enabled) return;
    for (const e of await this.entries()) {
      if (e.config.enableWatching) await this.watcher.add(e.id, this.guardFor(e.id, e.config));
    }
  }

  /** Listen to changes in watched workspaces (paths the rules would let a caller see). */
  onChange(listener: (change: WorkspaceChange) => void): () => void {
    return this.watcher.onChange(listener);
  }

  async close(): Promise<void> {
    this.watcher.close();
  }

  /** Configured workspaces in config order, then run-time ones by the time they were added. */
  private async entries(): Promise<Entry[]> {
    const configured: Entry[] = Object.entries(this.settings.workspaces).map(([id, config]) => ({ id, config, source: 'config' }));
    const keys = await this.storage.keys(SERVER_WORKSPACE_KEY);
    const stored: Entry[] = [];
    for (const key of keys) {
      const s = await this.storage.get<StoredWorkspace>(key);
      const id = key.slice(SERVER_WORKSPACE_KEY.length);
      if (s && !this.configured(id)) stored.push({ id, config: s.config, source: 'runtime', addedAt: s.addedAt });
    }
    stored.sort((a, b) => (a.addedAt ?? '').localeCompare(b.addedAt ?? '') || a.id.localeCompare(b.id));
    return [...configured, ...stored];
  }

  /**
   * The configured workspace `id`, own entries only: an id such as `toString` or `__proto__` is
   * not a workspace of the config object's prototype.
   */
  private configured(id: string): WorkspaceConfig | undefined {
    return Object.hasOwn(this.settings.workspaces, id) ? this.settings.workspaces[id] : undefined;
  }

  private guardFor(id: string, config: WorkspaceConfig): PathGuard {
    const key = JSON.stringify(config);
    const cached = this.guards.get(id);
    if (cached?.key === key) return cached.guard;
    const guard = new PathGuard(config);
    this.guards.set(id, { key, guard });
    return guard;
  }

  /**
   * The workspace for a workspaceId. `default` is the workspace with id `default` if configured,
   * else the first configured, else the first added at run time.
   */
  async resolve(workspaceId = 'default'): Promise<{ id: string; guard: PathGuard }> {
    if (!this.enabled) throw new CoreError('NO_WORKSPACES', 'no workspaces available');
    const configured = this.configured(workspaceId);
    if (configured) return { id: workspaceId, guard: this.guardFor(workspaceId, configured) };
    if (WORKSPACE_ID.test(workspaceId) && workspaceId !== 'default') {
      const stored = await this.storage.get<StoredWorkspace>(SERVER_WORKSPACE_KEY + workspaceId);
      if (stored) return { id: workspaceId, guard: this.guardFor(workspaceId, stored.config) };
    }
    const all = await this.entries();
    if (all.length === 0) throw new CoreError('NO_WORKSPACES', 'no workspaces available');
    if (workspaceId === 'default') {
      const first = all[0] as Entry;
      return { id: first.id, guard: this.guardFor(first.id, first.config) };
    }
    throw new CoreError('NOT_FOUND', 'workspace not found');
  }

  /** getServerWorkspaces: every workspace with its accessibility. Paths only when `includePaths`. */
  async list(opts: { includePaths: boolean }): Promise<Record<string, WorkspaceInfo>> {
    if (!this.enabled) return {};
    const all = await this.entries();
    const defaultId = all.find((e) => e.id === 'default' && e.source === 'config')?.id ?? all[0]?.id;
    const out: Record<string, WorkspaceInfo> = {};
    await Promise.all(
      all.map(async (e) => {
        const { accessible, writable } = await probe(this.guardFor(e.id, e.config));
        const c = e.config;
        out[e.id] = {
          id: e.id,
          name: c.name ?? e.id,
          ...(c.description !== undefined && { description: c.description }),
          ...(opts.includePaths && { path: c.path }),
          readOnly: c.readOnly,
          followSymlinks: c.followSymlinks,
          enableWatching: c.enableWatching,
          ...(c.maxFileSize !== undefined && { maxFileSize: c.maxFileSize }),
          ...(c.allowedExtensions && { allowedExtensions: c.allowedExtensions }),
          ...(c.blockedExtensions && { blockedExtensions: c.blockedExtensions }),
          hasPathRules: Boolean(c.allowedPaths?.length || c.blockedPaths?.length),
          source: e.source,
          isDefault: e.id === defaultId,
          accessible,
          writable: accessible && writable && !c.readOnly,
        };
      }),
    );
    // Keep the order of `entries()` (Promise.all filled `out` in completion order).
    return Object.fromEntries(all.map((e) => [e.id, out[e.id] as WorkspaceInfo]));
  }

  /** addServerWorkspace: persist a new workspace; usable at once on every server sharing the storage. */
  async add(id: string, input: WorkspaceConfigInput, addedBy?: string): Promise<MutationResult> {
    if (!this.enabled) throw new CoreError('FORBIDDEN', 'server workspaces are disabled');
    if (!WORKSPACE_ID.test(id)) throw new CoreError('BAD_REQUEST', 'invalid workspace id');
    if (id === 'default') throw new CoreError('BAD_REQUEST', '"default" is reserved for the default workspace');
    if (this.configured(id)) throw new CoreError('CONFLICT', 'workspace already exists');
    const config = WorkspaceConfigSchema.parse(input);
    if (!path.isAbsolute(config.path)) throw new CoreError('BAD_REQUEST', 'workspace path must be absolute');
    try {
      if (!(await stat(await realpath(config.path))).isDirectory()) throw new Error('not a directory');
    } catch {
      throw new CoreError('BAD_REQUEST', 'workspace path is not an existing directory');
    }
    const record: StoredWorkspace = { config, addedAt: new Date().toISOString(), ...(addedBy && { addedBy }) };
    if (!(await this.storage.compareAndSet(SERVER_WORKSPACE_KEY + id, undefined, record))) {
      throw new CoreError('CONFLICT', 'workspace already exists');
    }
    this.logger.info('server workspace added', { workspaceId: id, addedBy });
    if (config.enableWatching) await this.watcher.add(id, this.guardFor(id, config));
    return { success: true, id, message: `server workspace '${id}' added` };
  }

  /** removeServerWorkspace: only workspaces added at run time can be removed. */
  async remove(id: string, removedBy?: string): Promise<MutationResult> {
    if (!this.enabled) throw new CoreError('FORBIDDEN', 'server workspaces are disabled');
    if (this.configured(id)) throw new CoreError('FORBIDDEN', 'configured workspaces cannot be removed at run time');
    if (!WORKSPACE_ID.test(id) || !(await this.storage.delete(SERVER_WORKSPACE_KEY + id))) {
      throw new CoreError('NOT_FOUND', 'workspace not found');
    }
    this.watcher.remove(id);
    this.guards.delete(id);
    this.logger.info('server workspace removed', { workspaceId: id, removedBy });
    return { success: true, id, message: `server workspace '${id}' removed` };
  }

  async listFiles(workspaceId: string, rel: string, opts: wsfs.ListOptions): Promise<string[]> {
    return wsfs.listFiles((await this.resolve(workspaceId)).guard, rel, opts);
  }

  async readFile(workspaceId: string, rel: string, encoding: wsfs.FileEncoding): Promise<wsfs.ReadResult> {
    return wsfs.readFile((await this.resolve(workspaceId)).guard, rel, encoding);
  }

  async writeFile(workspaceId: string, rel: string, content: string, encoding: wsfs.FileEncoding): Promise<wsfs.WriteResult> {
    return wsfs.writeFile((await this.resolve(workspaceId)).guard, rel, content, encoding);
  }

  async pathExists(workspaceId: string, rel: string): Promise<{ exists: boolean; path: string }> {
    return wsfs.pathExists((await this.resolve(workspaceId)).guard, rel);
  }
}

async function probe(guard: PathGuard): Promise<{ accessible: boolean; writable: boolean }> {
  try {
    const root = await guard.root();
    await access(root, constants.R_OK | constants.X_OK);
    const writable = await access(root, constants.W_OK).then(
      () => true,
      () => false,
    );
    return { accessible: true, writable };
  } catch {
    return { accessible: false, writable: false };
  }
}
