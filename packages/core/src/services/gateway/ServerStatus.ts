import type { McpServerConfig } from '../../config/sections/mcpServers.js';
import type { ConnectionState } from './UpstreamConnection.js';
import type { ServerEntry } from './UpstreamContent.js';
import { exposedMcpName, serverExposesTool } from './gatewayAccess.js';

/** What a server looks like on a status page (administrators) or a listing (callers). */
export interface ServerStatus {
  name: string;
  type: McpServerConfig['type'];
  source: 'config' | 'api';
  enabled: boolean;
  perUser: boolean;
  expose: 'tools' | 'search';
  state: ConnectionState['kind'];
  error?: string;
  tools: number;
}

/** What only administrators see of a server (gateway.serverStatus, the console's MCP view). */
export interface AdminServerStatus {
  stderr?: string;
  pid?: number | null;
  calls: number;
  errors: number;
  userConnections: number;
  description?: string;
  /** When a failed connection tries again (ISO time). */
  retryAt?: string;
  /** Who may use the server: null is no restriction; credentials says how perUser servers' users bring theirs. */
  access: { allowScopes: string[] | null; allowUsers: string[] | null; credentials: 'oauth' | 'headers' | null };
  /** How many of its resources the shared connection is subscribed to at the upstream (resources/subscribe of 2025 sessions). */
  resourceSubscriptions: number;
  /** The shared connection's tools as clients see them (`<server>__<tool>`, allow/deny applied), descriptions cut to 500 characters. */
  toolList: Array<{ name: string; description: string }>;
}

/**
 * A server's status; `tools` is how many tools it shows: for a caller (`listServers`), those that
 * caller is shown (McpGateway.toolsShown), for administrators all its shared connection lists.
 */
export function serverSummary(e: ServerEntry, tools: number): ServerStatus {
  const state = e.shared?.state ?? { kind: e.config.enabled ? ('idle' as const) : ('idle' as const) };
  // A reconnect in progress still shows the last attempt's error: a flapping upstream's cause stays visible.
  const error = state.kind === 'failed' ? state.error : state.kind === 'connecting' ? state.lastError : undefined;
  return {
    name: e.name,
    type: e.config.type,
    source: e.source,
    enabled: e.config.enabled,
    perUser: e.config.perUser,
    expose: e.config.expose,
    state: state.kind,
    ...(error !== undefined ? { error } : {}),
    tools,
  };
}

/** A server with its health as administrators see it (gateway.serverStatus, the console); `userConnections` open now. */
export function adminStatus(e: ServerEntry, userConnections: number): ServerStatus & AdminServerStatus {
  return {
    ...serverSummary(e, e.shared?.lists.tools.length ?? 0),
    ...(e.shared?.state.kind === 'failed' ? { retryAt: new Date(e.shared.state.retryAt).toISOString() } : {}),
    access: {
      allowScopes: e.config.allowScopes ?? null,
      allowUsers: e.config.allowUsers ?? null,
      // perUser: how each user brings credentials (OAuth to the upstream, or headers through gateway.setCredentials).
      credentials: e.config.perUser ? (e.config.type !== 'stdio' && e.config.oauth ? 'oauth' : 'headers') : null,
    },
    // The shared connection's tools as clients see them, after the server's allow/deny rules; perUser servers list
    // per user, so none here. Descriptions are the upstream's untrusted text, cut to 500 characters.
    toolList: (e.shared?.lists.tools ?? [])
      .filter((t) => serverExposesTool(e.config, t.name))
      .map((t) => ({ name: exposedMcpName(e.name, t.name), description: (t.description ?? '').slice(0, 500) })),
    ...(e.shared
      ? {
          pid: e.shared.pid,
          calls: e.shared.counts.calls,
          resourceSubscriptions: e.shared.resourceSubscriptions,
          errors: e.shared.counts.errors,
          ...(e.shared.stderrTail ? { stderr: e.shared.stderrTail } : {}),
        }
      : { calls: 0, errors: 0, resourceSubscriptions: 0 }),
    userConnections,
    ...(e.config.description ? { description: e.config.description } : {}),
  };
}
