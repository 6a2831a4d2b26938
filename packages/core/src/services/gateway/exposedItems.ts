import { exposedMcpName, exposedName, splitExposedName } from './gatewayAccess.js';

/** Where a renamed upstream tool's or prompt's own name is kept in its listed definition (exposedMcpName). */
export const UPSTREAM_NAME_META = 'ai-backend/upstreamName';

type Named = { name: string; title?: string; _meta?: unknown };

/** Per listed array (an upstream's tools or prompts as last read): its items by the names clients see. */
const cache = new WeakMap<readonly Named[], ReadonlyMap<string, Named>>();

/**
 * A server's tools or prompts that it shows (`shown`: tools.allow / deny for tools), by the name
 * clients see (exposedMcpName); of two that would show one name, the first. Kept per listing (the
 * array), which calls and prompts/get look their item up in; a server's rules never change for a
 * listing (a changed server is a new connection with new lists).
 */
export function exposedItems<T extends Named>(
  server: string,
  items: readonly T[],
  shown?: (name: string) => boolean,
): ReadonlyMap<string, T> {
  const known = cache.get(items);
  if (known) return known as ReadonlyMap<string, T>;
  const byName = new Map<string, T>();
  for (const item of items) {
    if (shown && !shown(item.name)) continue;
    const name = exposedMcpName(server, item.name);
    if (!byName.has(name)) byName.set(name, item);
  }
  cache.set(items, byName);
  return byName;
}

/**
 * The item `name` stands for among `byName` (exposedItems): by the name clients see, or by
 * `<server>__<its own name>` (gateway.callTool's `server` and `tool`; clients that kept a name
 * from before it was shortened). The name it is listed under comes with it (key rules match that).
 */
export function findExposed<T extends Named>(
  server: string,
  byName: ReadonlyMap<string, T>,
  name: string,
): { item: T; exposed: string } | undefined {
  const listed = byName.get(name);
  if (listed) return { item: listed, exposed: name };
  const parts = splitExposedName(name);
  if (!parts || parts.server !== server) return undefined;
  const exposed = exposedMcpName(server, parts.name);
  const item = byName.get(exposed);
  return item?.name === parts.name ? { item, exposed } : undefined;
}

/** `item` as clients see it under `exposed`: one shown under another name than its own keeps its own in title and _meta. */
export function asListed<T extends Named>(item: T, server: string, exposed: string): T {
  if (exposed === exposedName(server, item.name)) return { ...item, name: exposed };
  const meta = { ...(item._meta as Record<string, unknown> | undefined), [UPSTREAM_NAME_META]: item.name };
  return { ...item, name: exposed, title: item.title ?? item.name, _meta: meta };
}
