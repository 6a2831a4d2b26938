import { call } from './api.js';
import { errorBox, fmt, h, section, table } from './dom.js';
import type { Output } from './types.js';

type Upstream = Output<'gateway.serverStatus'>['servers'][number];

/** Upstream tool descriptions are the upstream's text (tool poisoning): shown as text, and short. */
const DESCRIPTION_CHARS = 160;
const cut = (s: string) => (s.length > DESCRIPTION_CHARS ? `${s.slice(0, DESCRIPTION_CHARS - 1)}…` : s);

/** A server's health in words: connected, connecting, or the error with when it tries again. */
function health(s: Upstream): string {
  if (!s.enabled) return 'disabled';
  if (s.state === 'ready') return 'connected';
  if (s.state === 'connecting') return s.error ? `reconnecting (last error: ${s.error})` : 'connecting';
  if (s.state === 'failed') return `error: ${s.error ?? 'unknown'}${s.retryAt ? ` (reconnecting at ${fmt.time(s.retryAt)})` : ''}`;
  return s.perUser ? `per user (${fmt.int(s.userConnections)} open)` : 'not connected';
}

function whoMayUse(s: Upstream): string {
  const parts = [
    s.access.allowScopes ? `scopes: ${s.access.allowScopes.join(', ')}` : null,
    s.access.allowUsers ? `users: ${s.access.allowUsers.join(', ')}` : null,
    s.access.credentials ? `each user's own credentials (${s.access.credentials === 'oauth' ? 'OAuth' : 'headers'})` : null,
  ].filter((p): p is string => p !== null);
  return parts.length ? parts.join('; ') : 'everyone';
}

/**
 * The gateway's upstream MCP servers (mcpServers and gateway.addServer): health, exposure, who may
 * use them and their tools as clients see them. gateway.serverStatus is an administrator procedure.
 */
export async function upstreamsSection(): Promise<HTMLElement> {
  let servers: Upstream[];
  try {
    servers = (await call('gateway.serverStatus')).servers;
  } catch (e) {
    return section('Upstream servers', errorBox(e));
  }
  if (!servers.length)
    return section('Upstream servers', h('p', { class: 'muted' }, 'None (mcpServers in the config file, or gateway.addServer).'));
  return h(
    'div',
    { id: 'mcp-upstreams' },
    section(
      `Upstream servers (${servers.length})`,
      table(
        ['server', 'type', 'source', 'enabled', 'health', 'expose', 'tools shown', 'calls', 'errors', 'who may use it'],
        servers.map((s) => [
          h('span', { 'data-upstream': s.name }, s.name),
          s.type,
          s.source,
          s.enabled ? 'yes' : 'no',
          h('span', { 'data-upstream-health': s.name }, health(s)),
          s.expose,
          // After the server's allow/deny rules (`tools` counts what the upstream lists).
          fmt.int(s.toolList.length),
          fmt.int(s.calls),
          fmt.int(s.errors),
          whoMayUse(s),
        ]),
      ),
    ),
    ...servers
      .filter((s) => s.toolList.length > 0)
      .map((s) =>
        section(
          `${s.name}: tools (${s.toolList.length})${s.expose === 'search' ? ', behind search_tools' : ''}`,
          table(
            ['name', 'description (from the upstream)'],
            s.toolList.map((t) => [h('code', { 'data-upstream-tool': t.name }, t.name), cut(t.description)]),
          ),
        ),
      ),
  );
}
