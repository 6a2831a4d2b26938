import type { ResolvedConfig } from '../../../config/schema.js';
import type { McpServerConfig } from '../../../config/sections/mcpServers.js';
import { CoreError } from '../../../kernel/CoreError.js';

/** A configured upstream that takes per-user credentials: what the credential flows need of it. */
export interface PerUserServer {
  name: string;
  url: string;
  allowPrivateNetwork: boolean;
  timeoutMs: number;
  oauth?: { clientId?: string | undefined; clientSecret?: string | undefined; scopes?: string[] | undefined };
}

/** Looks a server up by name: a PerUserServer, or a CoreError saying why it takes no per-user credentials. */
export type PerUserServerLookup = (name: string) => PerUserServer;

/** The lookup over the config's `mcpServers`. */
export function perUserServersFromConfig(config: Pick<ResolvedConfig, 'mcpServers'>): PerUserServerLookup {
  return perUserServersFrom((name) => (Object.hasOwn(config.mcpServers, name) ? config.mcpServers[name] : undefined));
}

/**
 * The lookup over the servers `find` knows: the runtime passes the gateway's, so a server added
 * at run time (gateway.addServer with perUser: true) takes credentials like a configured one.
 */
export function perUserServersFrom(find: (name: string) => McpServerConfig | undefined): PerUserServerLookup {
  return (name) => {
    const s = find(name);
    if (!s?.enabled) throw new CoreError('NOT_FOUND', `no MCP server "${name}" is configured`);
    if (!('url' in s) || !s.perUser) {
      throw new CoreError(
        'BAD_REQUEST',
        `MCP server "${name}" does not take per-user credentials (it is not perUser: its credentials, if any, are the shared ones of the config)`,
      );
    }
    return { name, url: s.url, allowPrivateNetwork: s.allowPrivateNetwork, timeoutMs: s.timeoutMs, ...(s.oauth ? { oauth: s.oauth } : {}) };
  };
}
