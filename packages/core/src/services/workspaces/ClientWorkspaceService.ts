import { CoreError } from '../../kernel/CoreError.js';
import type { Logger } from '../../kernel/Logger.js';
import type { Storage } from '../../kernel/Storage.js';
import { OWNER_LISTED } from '../../kernel/ownerListings.js';
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

/** Storage key prefix of client workspaces: `ws:client:<encoded owner>:<id>`. */
export const CLIENT_WORKSPACE_KEY = OWNER_LISTED.clientWorkspaces;
/** Registered client workspaces per owner, and roots kept per MCP session. */
export const MAX_CLIENT_WORKSPACES = 100;
export const MAX_URI_LENGTH = 2048;

type StoredClientWorkspace = Omit<ClientWorkspace, 'source'>;

const SESSION_OWNER = 'session:';
/** The owner of registrations made by an MCP session without an identity. */
export const sessionOwner = (sessionId: string) => `${SESSION_OWNER}${sessionId}`;

// The owner is encoded so that one owner's prefix can never be the start of another's.
const prefixOf = (owner: string) => `${CLIENT_WORKSPACE_KEY}${encodeURIComponent(owner)}:`;
const keyOf = (owner: string, id: string) => prefixOf(owner) + id;
/**
 * Set before an MCP session without an identity first registers a client workspace: only such a
 * session's close lists its keys. A key listing is a range read on SQL but a walk of the whole
 * keyspace on Redis and in memory, and every session closes: listing for each made a session's
 * close cost grow with everything stored (ledgers included) for as long as the server ran.
 */
const registeredMark = (sessionId: string) => `ws:client-session:${encodeURIComponent(sessionId)}`;

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
 * stored one key each (`ws:client:<owner>:<id>`), so concurrent ones never conflict. Roots an
 * MCP client reports through roots/list are kept in memory for the session's lifetime
 * (setSessionRoots / clearSession).
 */
export class ClientWorkspaceService {
  private readonly sessionRoots = new Map<string, ClientWorkspace[]>();

  constructor(
    private readonly storage: Storage,
    private readonly logger: Logger,
  ) {}

  async register(owner: string, input: ClientWorkspaceInput): Promise<{ success: true; id: string; message: string }> {
    if (!WORKSPACE_ID.test(input.id)) throw new CoreError('BAD_REQUEST', 'invalid client workspace id');
    const entry: StoredClientWorkspace = {
      id: input.id,
      uri: validateFileUri(input.uri),
      ...(input.name !== undefined && { name: input.name }),
      ...(input.description !== undefined && { description: input.description }),
      registeredAt: new Date().toISOString(),
    };
    const key = keyOf(owner, input.id);
    const existed = (await this.storage.get(key)) !== undefined;
    // The cap is checked before writing, so racing registrations may pass it by a few; it only
    // bounds what one caller can store.
    if (!existed && (await this.storage.keys(prefixOf(owner))).length >= MAX_CLIENT_WORKSPACES) {
      throw new CoreError('BAD_REQUEST', `at most ${MAX_CLIENT_WORKSPACES} client workspaces can be registered`);
    }
    // The mark goes first: a crash between the two writes leaves it, never a key its close would not find.
    if (owner.startsWith(SESSION_OWNER)) await this.storage.set(registeredMark(owner.slice(SESSION_OWNER.length)), true);
    await this.storage.set(key, entry);
    return { success: true, id: input.id, message: `client workspace '${input.id}' ${existed ? 'updated' : 'registered'}` };
  }

  async unregister(owner: string, id: string): Promise<{ success: true; id: string; message: string }> {
    if (!WORKSPACE_ID.test(id) || !(await this.storage.delete(keyOf(owner, id)))) {
      throw new CoreError('NOT_FOUND', 'client workspace not found');
    }
    return { success: true, id, message: `client workspace '${id}' unregistered` };
  }

  /** Registered workspaces of the owner, then the roots of the MCP session (if any). */
  async list(owner: string, sessionId?: string): Promise<ClientWorkspace[]> {
    const registered: ClientWorkspace[] = [];
    for (const key of await this.storage.keys(prefixOf(owner))) {
      const w = await this.storage.get<StoredClientWorkspace>(key);
      if (w) registered.push({ ...w, source: 'registered' });
    }
    registered.sort((a, b) => a.id.localeCompare(b.id));
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

  /**
   * Forget a session (closed or expired): its roots, and what it registered without an identity
   * (owner `session:<id>`), which no later caller can reach: left stored, every session could
   * add 100 keys that never go away.
   */
  async clearSession(sessionId: string): Promise<void> {
    this.sessionRoots.delete(sessionId);
    const mark = registeredMark(sessionId);
    if ((await this.storage.get(mark)) === undefined) return;
    for (const key of await this.storage.keys(prefixOf(sessionOwner(sessionId)))) await this.storage.delete(key);
    await this.storage.delete(mark);
  }
}
