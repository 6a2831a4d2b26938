import { BlockList, isIP } from 'node:net';
import type Micromatch from 'micromatch';
import { lazyRequire } from '../../lib/lazyRequire.js';

const micromatch = lazyRequire<typeof Micromatch>('micromatch');
import { CoreError } from '../../kernel/CoreError.js';
import type { ApiKeyGrant } from '../../kernel/identity.js';

const lists = new Map<string, BlockList>();

function blockListOf(ranges: readonly string[]): BlockList {
  const id = ranges.join(',');
  let list = lists.get(id);
  if (list) return list;
  list = new BlockList();
  for (const r of ranges) {
    const [ip, bits] = r.split('/') as [string, string | undefined];
    const type = isIP(ip) === 6 ? 'ipv6' : 'ipv4';
    if (bits === undefined) list.addAddress(ip, type);
    else list.addSubnet(ip, Number(bits), type);
  }
  if (lists.size > 1000) lists.clear();
  lists.set(id, list);
  return list;
}

/** Is `ip` in one of `ranges` (IPs or CIDRs)? An unknown address never is. IPv4-mapped IPv6 counts as IPv4. */
export function ipAllowed(ranges: readonly string[], ip: string | undefined): boolean {
  if (!ip) return false;
  const plain = ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip;
  const kind = isIP(plain);
  if (!kind) return false;
  return blockListOf(ranges).check(plain, kind === 6 ? 'ipv6' : 'ipv4');
}

/** Does the key's model rule admit `provider`/`model` (globs over `model` or `provider/model`)? No key: yes. */
export function keyAllowsModel(grant: ApiKeyGrant | undefined, provider: string, model: string): boolean {
  if (!grant) return true;
  if (grant.providers && !grant.providers.includes(provider)) return false;
  if (!grant.models) return true;
  const globs = [...grant.models];
  return micromatch().isMatch(model, globs, { nocase: true }) || micromatch().isMatch(`${provider}/${model}`, globs, { nocase: true });
}

/**
 * Does the key admit a target of route `route` (ai.routes) on `provider`? Its model rule admits
 * the target itself or names the route (globs over the route name), and its provider rule admits
 * the target's provider: a key limited to `fast` may use every deployment of `fast`, and nothing
 * else. No key: yes.
 */
export function keyAllowsRouteTarget(grant: ApiKeyGrant | undefined, route: string, provider: string, model: string): boolean {
  if (!grant) return true;
  if (keyAllowsModel(grant, provider, model)) return true;
  if (grant.providers && !grant.providers.includes(provider)) return false;
  return grant.models !== undefined && micromatch().isMatch(route, [...grant.models], { nocase: true });
}

/**
 * Does the key's `tools` rule admit this procedure, by its path or its MCP name (`toolName`:
 * undefined for a procedure not published on MCP)? No rule: yes.
 */
export function keyAllowsProcedure(grant: ApiKeyGrant | undefined, path: string, toolName: string | undefined): boolean {
  if (!grant?.tools) return true;
  const globs = [...grant.tools];
  return micromatch().isMatch(path, globs) || (toolName !== undefined && micromatch().isMatch(toolName, globs));
}

/**
 * Does the key's `tools` rule name a resource that no procedure serves, by one of `names` (its
 * URI, its URI template)? A rule entry equal to the name, or a glob matching it as a path (`*`
 * within one segment, `**` across them: `https://docs.example.com/**`). No rule: yes.
 */
export function keyAllowsResource(grant: ApiKeyGrant | undefined, names: ReadonlyArray<string | undefined>): boolean {
  if (!grant?.tools) return true;
  const globs = [...grant.tools];
  return names.some((n) => n !== undefined && (globs.includes(n) || micromatch().isMatch(n, globs)));
}

/**
 * The refusal of an API key's `tools` rule for a tool or prompt no procedure serves (an MCP
 * gateway upstream's, `name` as clients see it). Callers are answered as for an unknown one, so a
 * key cannot tell it exists; this error travels as that answer's cause, for the security log.
 */
export function keyToolRefusal(name: string): CoreError {
  return new CoreError('FORBIDDEN', `this API key may not use ${name.slice(0, 200)} (its tools rule)`, {
    details: { reason: 'key_tool_not_allowed' },
  });
}

/** The refusal of a resource (or template) the key may not read; answered as an unknown one (keyToolRefusal). */
export function keyResourceRefusal(): CoreError {
  return new CoreError('FORBIDDEN', 'this API key may not read this resource', { details: { reason: 'key_resource_not_allowed' } });
}

/**
 * May a call through this key use `provider`/`model`? Refused with FORBIDDEN (HTTP 403) naming
 * the rule. Model globs match `model` or `provider/model`, case-insensitively, as the server's own
 * allowedModels do.
 */
export function assertKeyAllowsModel(grant: ApiKeyGrant | undefined, provider: string, model: string): void {
  if (!grant) return;
  if (grant.providers && !grant.providers.includes(provider)) {
    throw new CoreError('FORBIDDEN', `this API key may not use provider ${provider}`, {
      details: { reason: 'key_provider_not_allowed', provider },
    });
  }
  if (!keyAllowsModel(grant, provider, model)) {
    throw new CoreError('FORBIDDEN', `this API key may not use model ${provider}/${model}`, {
      details: { reason: 'key_model_not_allowed', provider, model },
    });
  }
}

/** ai.listAllowedModels narrowed to what a key may use (unchanged without a key). */
export function modelsForKey<T extends { models: Record<string, string[]> } | { provider: string; models: string[] }>(
  grant: ApiKeyGrant | undefined,
  listed: T,
): T {
  if (!grant) return listed;
  if ('provider' in listed) return { ...listed, models: listed.models.filter((m) => keyAllowsModel(grant, listed.provider, m)) };
  const models = Object.fromEntries(Object.entries(listed.models).map(([p, ms]) => [p, ms.filter((m) => keyAllowsModel(grant, p, m))]));
  return { ...listed, models } as T;
}
