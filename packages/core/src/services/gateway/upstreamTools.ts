import { CoreError } from '../../kernel/CoreError.js';
import type { Identity } from '../../kernel/identity.js';
import { keyAllowsTool, serverExposesTool } from './gatewayAccess.js';
import type { GatewayTool } from './gatewayTools.js';
import { asListed, exposedItems, findExposed } from './exposedItems.js';
import type { Tool } from './mcpWire.js';
import type { UpstreamConnection } from './UpstreamConnection.js';
import type { ServerEntry } from './UpstreamContent.js';

/** A connection's tools this caller sees: those the server exposes and the caller's API key admits, as clients see them. */
export function upstreamTools(entry: ServerEntry, conn: UpstreamConnection, identity: Identity | null): GatewayTool[] {
  const out: GatewayTool[] = [];
  for (const [name, t] of exposedTools(entry, conn)) {
    if (!keyAllowsTool(identity, name)) continue;
    // Without `execution`: the gateway runs a task-only upstream tool as a task itself (callAsTask), so clients call it plainly.
    const { execution: _execution, ...definition } = asListed(t, entry.name, name);
    out.push({ ...definition, server: entry.name, upstreamName: t.name } as GatewayTool);
  }
  return out;
}

/** A connection's tools the server exposes (tools.allow / deny), by the name clients see (exposedItems). */
export function exposedTools(entry: ServerEntry, conn: UpstreamConnection): ReadonlyMap<string, Tool> {
  return exposedItems(entry.name, conn.lists.tools, (name) => serverExposesTool(entry.config, name));
}

/**
 * The upstream tool `name` stands for on this connection: by the name clients see, or (gateway.callTool's `server` and
 * `tool`) by `<server>__<its own name>`.
 */
export function upstreamToolOn(entry: ServerEntry, conn: UpstreamConnection, name: string): { tool: string; exposed: string } | undefined {
  const found = findExposed(entry.name, exposedTools(entry, conn), name);
  return found && { tool: found.item.name, exposed: found.exposed };
}

/**
 * The answer for a tool that is not there, and for one the caller's API key may not call
 * (`refusal`, keyToolRefusal): the same to the caller, while the refusal rides along as the
 * cause, which only the security log reads (`key_refused`).
 */
export function unknownTool(name: string, refusal?: CoreError): CoreError {
  return new CoreError('NOT_FOUND', `unknown tool: ${name.slice(0, 200)}`, {
    details: { reason: 'unknown_tool' },
    ...(refusal ? { cause: refusal } : {}),
  });
}
