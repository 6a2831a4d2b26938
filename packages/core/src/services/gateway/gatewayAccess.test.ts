import { describe, expect, it } from 'vitest';
import { MCP_SERVER_NAME, McpServersSchema, mcpServerSchema } from '../../config/sections/mcpServers.js';
import type { Identity } from '../../kernel/identity.js';
import { exposedName, keyAllowsServer, keyAllowsTool, serverAllows, serverExposesTool, splitExposedName } from './gatewayAccess.js';

const server = (extra: Record<string, unknown> = {}) =>
  mcpServerSchema().parse({ type: 'http', url: 'https://mcp.example.com/mcp', ...extra });
const who = (over: Partial<Identity> = {}): Identity => ({ sub: 'u1', scopes: ['mcp'], isAdmin: false, via: 'jwt', ...over });

describe('gateway names and permissions', () => {
  it('names are <server>__<tool> and split at the first __ (tool names may contain __ themselves)', () => {
    expect(exposedName('docs', 'search')).toBe('docs__search');
    expect(splitExposedName('docs__find__all')).toEqual({ server: 'docs', name: 'find__all' });
    expect(splitExposedName('greeting')).toBeUndefined();
    expect(splitExposedName('__x')).toBeUndefined();
  });

  it('server names with __ are refused by the config (they would make names ambiguous)', () => {
    expect(McpServersSchema.safeParse({ a__b: { command: 'x' } }).success).toBe(false);
    expect(McpServersSchema.safeParse({ 'a-b_c': { command: 'x' } }).success).toBe(true);
    // perUser needs a remote server: a stdio process has no per-user credentials.
    expect(McpServersSchema.safeParse({ s: { command: 'x', perUser: true } }).success).toBe(false);
  });

  it('every server name the config accepts round-trips through <server>__<tool>, whatever the tool name', () => {
    // A server name ending in "_" would make "a_" + "__" + "x" read as server "a", tool "_x": its tools listed but misrouted.
    expect(McpServersSchema.safeParse({ a_: { command: 'x' } }).success).toBe(false);
    expect(McpServersSchema.safeParse({ 'a-': { command: 'x' } }).success).toBe(true);
    const names = ['a', 'a-', 'a_b', 'a-_b', '0', 'x'.repeat(40), 'a_', 'a__', '_a', 'b_c_'];
    for (const name of names) {
      if (!MCP_SERVER_NAME.test(name)) continue;
      for (const tool of ['x', '_x', '__x', 'x__y', '-', '_'])
        expect(splitExposedName(exposedName(name, tool))).toEqual({ server: name, name: tool });
    }
  });

  it('allowUsers: subject or verified e-mail; allowScopes: any one; administrators always; anonymous never when restricted', () => {
    const byUser = server({ allowUsers: ['u1', 'Ada@Example.com'] });
    expect(serverAllows(byUser, who())).toBe(true);
    expect(serverAllows(byUser, who({ sub: 'u2' }))).toBe(false);
    expect(serverAllows(byUser, who({ sub: 'u2', email: 'ada@example.com', emailVerified: true }))).toBe(true);
    expect(serverAllows(byUser, who({ sub: 'u2', email: 'ada@example.com' }))).toBe(false);
    expect(serverAllows(byUser, null)).toBe(false);
    expect(serverAllows(byUser, who({ sub: 'root', isAdmin: true }))).toBe(true);
    const byScope = server({ allowScopes: ['team:docs', 'team:eng'] });
    expect(serverAllows(byScope, who({ scopes: ['mcp', 'team:eng'] }))).toBe(true);
    expect(serverAllows(byScope, who())).toBe(false);
    expect(serverAllows(server(), null)).toBe(true);
    expect(serverAllows(server({ enabled: false }), who({ isAdmin: true }))).toBe(false);
  });

  it('tools allow/deny globs over the upstream names', () => {
    const s = server({ tools: { allow: ['read_*', 'list_*'], deny: ['read_secret*'] } });
    expect(serverExposesTool(s, 'read_file')).toBe(true);
    expect(serverExposesTool(s, 'read_secret_file')).toBe(false);
    expect(serverExposesTool(s, 'write_file')).toBe(false);
    expect(serverExposesTool(server(), 'anything')).toBe(true);
  });

  it('globs treat tool names as flat names: a leading dot or a slash is matched like any other character', () => {
    const s = server({ tools: { deny: ['*hidden*', 'admin*', 'x.*'] } });
    expect(serverExposesTool(s, '.hidden')).toBe(false);
    expect(serverExposesTool(s, 'admin/wipe')).toBe(false);
    expect(serverExposesTool(s, 'x./y')).toBe(false);
    expect(serverExposesTool(s, 'read/file')).toBe(true);
    expect(serverExposesTool(server({ tools: { deny: ['*'] } }), '.dot')).toBe(false);
    expect(serverExposesTool(server({ tools: { deny: ['*'] } }), 'a/b')).toBe(false);
    expect(serverExposesTool(server({ tools: { allow: ['files/*'] } }), 'files/read')).toBe(true);
    expect(serverExposesTool(server({ tools: { allow: ['files/*'] } }), 'files/a/b')).toBe(true);
    const key = who({ via: 'apiKey', apiKey: { id: 'k', tools: ['docs__*', '!docs__*admin*'] } });
    expect(keyAllowsTool(key, 'docs__pages/read')).toBe(true);
    expect(keyAllowsTool(who({ via: 'apiKey', apiKey: { id: 'k', tools: ['docs__*'] } }), 'docs__.x')).toBe(true);
  });

  it("an API key's tools rule is over the names clients see", () => {
    const key = who({ via: 'apiKey', apiKey: { id: 'k', tools: ['docs__*', 'greeting'] } });
    expect(keyAllowsTool(key, 'docs__search')).toBe(true);
    expect(keyAllowsTool(key, 'files__read')).toBe(false);
    expect(keyAllowsTool(who(), 'files__read')).toBe(true);
  });

  it("a key's tools rule admits a server's resources only when it admits the whole server", () => {
    const keyed = (tools?: string[]) => who({ via: 'apiKey', apiKey: { id: 'k', ...(tools ? { tools } : {}) } });
    expect(keyAllowsServer(keyed(['docs__*']), 'docs')).toBe(true);
    expect(keyAllowsServer(keyed(['*']), 'docs')).toBe(true);
    expect(keyAllowsServer(keyed(['docs__search']), 'docs')).toBe(false);
    expect(keyAllowsServer(keyed(['files__*']), 'docs')).toBe(false);
    expect(keyAllowsServer(keyed(), 'docs')).toBe(true);
    expect(keyAllowsServer(who(), 'docs')).toBe(true);
  });
});
