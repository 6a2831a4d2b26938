import { createHash } from 'node:crypto';
import type Micromatch from 'micromatch';
import { lazyRequire } from '../../lib/lazyRequire.js';
import type { Identity } from '../../kernel/identity.js';
import type { McpServerConfig } from '../../config/sections/mcpServers.js';
import { keyAllowsProcedure } from '../apiKeys/keyRules.js';

const micromatch = lazyRequire<typeof Micromatch>('micromatch');

/**
 * How upstream names appear to clients: `<server>__<tool>` (and the same for prompts; shortened
 * where that is no valid name: exposedMcpName). Server names cannot contain `__` (config), so the
 * first `__` splits a name unambiguously, and our own tool names never contain it, so nothing of
 * ours is renamed or shadowed.
 */
export const NAME_SEPARATOR = '__';

export function exposedName(server: string, name: string): string {
  return `${server}${NAME_SEPARATOR}${name}`;
}

/** What MCP clients accept as a tool name (MCP 2025-11-25 "Tool names"; the SDKs warn on or refuse others). */
export const MCP_TOOL_NAME = /^[A-Za-z0-9._-]{1,128}$/;
const HASH_CHARS = 8;

/**
 * The name clients see for an upstream tool or prompt: `<server>__<name>` when that is a valid MCP
 * tool name (MCP_TOOL_NAME), else `<server>__<name, other characters as _, cut to fit>_<8 hex of
 * its SHA-256>`, at most 128 characters. It depends on the two names only, so it is the same on
 * every instance and after every restart. A name that long or with other characters (spaces, `/`,
 * non-ASCII) was listed as it was, and clients that check names (or models, whose APIs allow
 * fewer characters still) could not use it. Two items that would show one name are told apart
 * where the list is read (the first is kept: exposedItems).
 */
export function exposedMcpName(server: string, name: string): string {
  const plain = exposedName(server, name);
  if (MCP_TOOL_NAME.test(plain)) return plain;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, HASH_CHARS);
  const room = 128 - plain.length + name.length - HASH_CHARS - 1;
  const readable = name.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, room);
  return exposedName(server, `${readable}_${hash}`);
}

/** `<server>__<name>` → its parts, or undefined for a name that is not an upstream's. */
export function splitExposedName(exposed: string): { server: string; name: string } | undefined {
  const at = exposed.indexOf(NAME_SEPARATOR);
  if (at <= 0) return undefined;
  return { server: exposed.slice(0, at), name: exposed.slice(at + NAME_SEPARATOR.length) };
}

/**
 * May this caller see and use this server at all? Per server `allowUsers` (subject ids, or
 * e-mails the issuer verified) and `allowScopes` (any one of them); administrators always may.
 * A server that restricts either is never visible to anonymous callers.
 */
export function serverAllows(server: McpServerConfig, identity: Identity | null): boolean {
  if (!server.enabled) return false;
  if (identity?.isAdmin) return true;
  if (server.allowUsers) {
    if (!identity) return false;
    const email = identity.emailVerified ? identity.email?.toLowerCase() : undefined;
    if (!server.allowUsers.some((u) => u === identity.sub || (email !== undefined && u.toLowerCase() === email))) return false;
  }
  if (server.allowScopes) {
    if (!identity) return false;
    if (!server.allowScopes.some((s) => holds(identity, s))) return false;
  }
  return true;
}

/**
 * Does the caller hold `scope` for a server's `allowScopes`? An API key only when its owner holds
 * it too (their last sign-in, read at this call): a key never reaches a server its owner cannot,
 * neither through a scope the owner lost since it was given nor through a key scope, which an
 * owner may give a key without holding it.
 */
function holds(identity: Identity, scope: string): boolean {
  if (!identity.scopes.includes(scope)) return false;
  return identity.via !== 'apiKey' || identity.apiKey?.ownerScopes?.includes(scope) === true;
}

/** Stands for `/` while matching: a character no tool name or glob has. */
const SLASH = '\u0000';
const flat = (s: string): string => s.replaceAll('/', SLASH);

/**
 * Does a tool name match one of `globs`? Tool names are flat names, not paths: micromatch's `*`
 * stops at `/` and never matches a leading `.`, so a deny rule such as `admin*` or `*hidden*`
 * would let `admin/wipe` or `.hidden` through. Here `*` matches any run of characters, dots and
 * slashes included (a literal `/` in a glob still matches a `/`).
 */
export function toolGlobMatch(name: string, globs: readonly string[]): boolean {
  return micromatch().isMatch(flat(name), globs.map(flat), { dot: true });
}

/** The server's own `tools: { allow, deny }` over the upstream's tool names. */
export function serverExposesTool(server: McpServerConfig, tool: string): boolean {
  const { allow, deny } = server.tools;
  if (allow && !toolGlobMatch(tool, allow)) return false;
  return deny.length === 0 || !toolGlobMatch(tool, deny);
}

/** The caller's API key `tools` rule over the name as clients see it (`<server>__<tool>`), matched as a flat name too. */
export function keyAllowsTool(identity: Identity | null, exposed: string): boolean {
  const tools = identity?.apiKey?.tools;
  if (!tools) return keyAllowsProcedure(identity?.apiKey, exposed, exposed);
  return toolGlobMatch(exposed, tools);
}

/**
 * Upstream resources have no names under the server's prefix (they keep their URIs): the key's
 * `tools` rule admits a server's resources only when it admits the whole server, that is, when it
 * matches `<server>__*` itself (`every__*`, `*`), not when it names some of the server's tools
 * (`every__echo`). No rule: yes.
 */
export function keyAllowsServer(identity: Identity | null, server: string): boolean {
  const tools = identity?.apiKey?.tools;
  return !tools || toolGlobMatch(exposedName(server, '*'), tools);
}
