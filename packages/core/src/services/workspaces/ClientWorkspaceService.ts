import { CoreError } from '../../errors/CoreError.js';
import type { Logger } from '../../runtime/Logger.js';
import type { Storage } from '../../storage/Storage.js';
import { WORKSPACE_ID } from './WorkspaceService.js';

/** A folder on the client's side (MCP root). Never grants access to server files. */
export interface ClientWorkspace {
  id: string;
  uri: string;
  name?: string;
  description?: string;
  registeredAt: string;
  /** `registered` through registerClientWorkspace, `mcp-roots` from the session's roots/list. */
  source: 'registered' | 'mcp-roots';
}

export interface ClientWorkspaceInput {
  id: string;
  uri: string;
  name?: string;
  description?: string;
}

/** Storage key prefix of the per-owner registries. */
export const CLIENT_WORKSPACE_KEY = 'ws:client:';
/** Registered client workspaces per owner, and roots kept per MCP session. */
export const MAX_CLIENT_WORKSPACES = 100;
export const MAX_URI_LENGTH = 2048;

type Registry = Record<string, Omit<ClientWorkspace, 'source'>>;

/**
 * Check a client workspace URI: a `file:` URL without host (or `localhost`), query, fragment
 * or credentials, whose path has no `.`/`..` segments, control characters, backslashes or
 * leftover percent escapes once decoded (double encoding). Returns the normalised URI.
 * The raw text is checked, because the URL parser would silently resolve `..` away.
 */
export function validateFileUri(uri: string): string {
  const bad = () => new CoreError('BAD_REQUEST', 'uri must be a file:// URI of a folder, without traversal');
  if (typeof uri !== 'string' || uri.length > MAX_URI_LENGTH) throw bad();
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw bad();
  }
  if (url.protocol !== 'file:' || (url.host !== '' && url.host !== 'localhost')) throw bad();
  if (url.search || url.hash || url.username || url.password) throw bad();
  const m = /^file:\/\/(?:localhost)?(\/[^?#]*)$/i.exec(uri);
  if (!m) throw bad();
  for (const raw of (m[1] as string).split('/').slice(1)) {
    let segment: string;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      throw bad();
    }
    if (segment === '.' || segment === '..' || /[\u0000-\u001f\u007f\\/]/.test(segment) || /%[0-9a-f]{2}/i.test(segment)) throw bad();
  }
  return url.href;
}

/**
 * Client workspaces, per owner: the caller's identity (`sub:<sub>`), else its MCP session
 * (`session:<id>`), else `anonymous` (shared by every unauthenticated caller). Registrations are
 * stored under `ws:client:<owner>`; roots an MCP client reports through roots/list are kept in
 * memory for the session's lifetime (setSessionRoots / clearSession).
 */
export class ClientWorkspaceService {
  private readonly sessionRoots = new Map<string, ClientWorkspace[]>();

  constructor(
    private readonly storage: Storage,
    private readonly logger: Logger,
  ) {}

  async register(owner: string, input: ClientWorkspaceInput): Promise<{ success: true; id: string; message: string }> {
    if (!WORKSPACE_ID.test(input.id)) throw new CoreError('BAD_REQUEST', 'invalid client workspace id');
    const entry = {
      id: input.id,
      uri: validateFileUri(input.uri),
      ...(input.name !== undefined && { name: input.name }),
      ...(input.description !== undefined && { description: input.description }),
      registeredAt: new Date().toISOString(),
    };
    const replaced = await this.update(owner, (current) => {
      if (!(input.id in current) && Object.keys(current).length >= MAX_CLIENT_WORKSPACES) {
        throw new CoreError('BAD_REQUEST', `at most ${MAX_CLIENT_WORKSPACES} client workspaces can be registered`);
      }
      return { ...current, [input.id]: entry };
    });
    return { success: true, id: input.id, message: `client workspace '${input.id}' ${replaced.had(input.id) ? 'updated' : 'registered'}` };
  }

  async unregister(owner: string, id: string): Promise<{ success: true; id: string; message: string }> {
    await this.update(owner, (current) => {
      if (!Object.hasOwn(current, id)) throw new CoreError('NOT_FOUND', 'client workspace not found');
      const next = { ...current };
      delete next[id];
      return next;
    });
    return { success: true, id, message: `client workspace '${id}' unregistered` };
  }

  /** Registered workspaces of the owner, then the roots of the MCP session (if any). */
  async list(owner: string, sessionId?: string): Promise<ClientWorkspace[]> {
    const registry = (await this.storage.get<Registry>(CLIENT_WORKSPACE_KEY + owner)) ?? {};
    const registered = Object.values(registry)
      .sort((a, b) => a.id.localeCompare(b.id))
      .map((w) => ({ ...w, source: 'registered' as const }));
    return [...registered, ...((sessionId && this.sessionRoots.get(sessionId)) || [])];
  }

  /**
   * Replace the roots of an MCP session (called by the MCP transport after roots/list and on
   * notifications/roots/list_changed). Invalid URIs are dropped. Returns how many were kept.
   */
  setSessionRoots(sessionId: string, roots: ReadonlyArray<{ uri: string; name?: string }>): number {
    const now = new Date().toISOString();
    const kept: ClientWorkspace[] = [];
    for (const root of roots.slice(0, MAX_CLIENT_WORKSPACES)) {
      try {
        const uri = validateFileUri(root.uri);
        const name = typeof root.name === 'string' ? root.name.slice(0, 200) : undefined;
        kept.push({ id: `root-${kept.length + 1}`, uri, ...(name && { name }), registeredAt: now, source: 'mcp-roots' });
      } catch {
        this.logger.debug('MCP root ignored: not a valid file URI', { sessionId });
      }
    }
    this.sessionRoots.set(sessionId, kept);
    return kept.length;
  }

  /** Forget a session's roots (session closed or expired). */
  clearSession(sessionId: string): void {
    this.sessionRoots.delete(sessionId);
  }

  /** Read-modify-write with compare-and-set, so concurrent registrations never lose each other. */
  private async update(owner: string, change: (current: Registry) => Registry): Promise<{ had: (id: string) => boolean }> {
    const key = CLIENT_WORKSPACE_KEY + owner;
    for (let attempt = 0; attempt < 16; attempt++) {
      const current = await this.storage.get<Registry>(key);
      const next = change(current ?? {});
      if (await this.storage.compareAndSet(key, current, next)) return { had: (id) => current !== undefined && Object.hasOwn(current, id) };
    }
    throw new CoreError('CONFLICT', 'client workspaces changed concurrently; retry');
  }
}
