/**
 * The key families that are listed per owner: `<family><encoded owner>:<rest>`, listed by
 * `storage.keys('<family><encoded owner>:')` on a user's request (an owner's API keys, a user's
 * stored provider keys, a caller's client workspaces). The services build their keys from these
 * constants, and the Redis store keeps an index per owner of exactly these families, so such a
 * listing reads the owner's few keys instead of scanning the keyspace (docs/storage.md, "Per-owner
 * listings on Redis"). The owner is encoded (encodeURIComponent), so it never holds a ':'.
 */
export const OWNER_LISTED = {
  /** `apikeyowner:<user>:<key id>`: the owner index of API keys. */
  apiKeyOwners: 'apikeyowner:',
  /** `vault:<user>:<provider>`: a user's stored provider keys. */
  vault: 'vault:',
  /** `ws:client:<owner>:<id>`: client workspaces of a user or an MCP session. */
  clientWorkspaces: 'ws:client:',
} as const;

const FAMILIES: readonly string[] = Object.values(OWNER_LISTED);

/**
 * The owner group of a key or a listing prefix: its family and owner through the ':' after the
 * owner (`vault:alice:openai` → `vault:alice:`), or undefined when it is in no listed family or
 * stops before the owner's end. Every key starting with a prefix whose group is G has group G.
 */
export function ownerGroupOf(key: string): string | undefined {
  for (const family of FAMILIES) {
    if (!key.startsWith(family)) continue;
    const end = key.indexOf(':', family.length);
    return end < 0 ? undefined : key.slice(0, end + 1);
  }
  return undefined;
}

/**
 * The key families listed whole, or by a prefix inside them, on an operator's or a user's request:
 * `storage.keys`/`listKeys` of the family or of a prefix under it (the alert outbox views, emptying
 * the response cache, a statistics reset, the vault's key rotation, the server workspaces). The
 * services build their keys from these constants, and the Redis store keeps one index per family
 * (docs/storage.md, "Family and log listings on Redis"), so such a listing reads the family's keys instead of
 * scanning the keyspace. A family here may also be in OWNER_LISTED (the vault: listed per user and
 * whole); families never nest (no family starts with another).
 */
export const FAMILY_LISTED = {
  /** `vault:<user>:<provider>`: rotated whole (KeyVault.rotateMasterKey). */
  vault: OWNER_LISTED.vault,
  /** `ws:server:<id>`: the server workspaces (getServerWorkspaces). */
  serverWorkspaces: 'ws:server:',
  /** `aicache:<hash>` and `aicache:bytes:<bucket>`: the response cache (admin.clearCache). */
  responseCache: 'aicache:',
  /** `stats:<day>:<entry>:<procedure>`, `stats:names:<day>`, `stats:upstream:<day>`: statistics (reset). */
  stats: 'stats:',
  /** `alerts:outbox:<delivery>`: alerts waiting for delivery (admin alert views). */
  alertOutbox: 'alerts:outbox:',
  /** `alerts:dead:<delivery>`: dead letters (admin alert views, trimmed over the limit). */
  alertDead: 'alerts:dead:',
} as const;

const WHOLE: readonly string[] = Object.values(FAMILY_LISTED);

/** The family of a key or a listing prefix that starts with one (FAMILY_LISTED), or undefined. */
export function familyOf(key: string): string | undefined {
  return WHOLE.find((family) => key.startsWith(family));
}
