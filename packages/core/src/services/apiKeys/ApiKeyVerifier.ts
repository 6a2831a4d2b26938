import type { ResolvedConfig } from '../../config/schema.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { Logger } from '../../kernel/Logger.js';
import type { AuthResult } from '../../kernel/identity.js';
import type { Storage } from '../../kernel/Storage.js';
import type { ApiKeyGrant, Identity } from '../../kernel/identity.js';
import type { ApiKeyHasher } from './apiKeyFormat.js';
import { apiKeyKeys, type ApiKeyRecord } from './apiKeyTypes.js';
import { ipAllowed } from './keyRules.js';
import { listsAdminsByEmail, ownerListedAdmin, type OwnerFacts } from './ownerAuthority.js';

/** What the verifier reads of a key's owner: the facts the administrator listing may name, and the scopes of their last sign-in. */
type OwnerProfile = OwnerFacts & { scopes?: string[] };
import { profileKey } from '../directory/UserDirectory.js';
import { AgedMap } from '../../lib/AgedMap.js';

/**
 * Where a verified key may be cached (one server: memory, SQLite), it is kept at most this long;
 * every change drops it at once there, so the bound only matters for a change made behind the
 * server's back.
 */
const CACHE_MS = 1_000;
/** `lastUsedAt` is written at most this often per key and instance (never on the request path). */
const TOUCH_MS = 60_000;
const MAX_CACHED = 10_000;

/** What happened to a presented key, for metrics. */
export type AuthOutcome = 'ok' | 'invalid' | 'revoked' | 'expired' | 'address' | 'unavailable';

const INVALID = () => new CoreError('INVALID_TOKEN', 'invalid API key');

/**
 * Whether an instance may cache key records at all: only where it is the one server of its store
 * (`memory`; `sqlite`, whose file one server holds), so that every change (revoke, update, rotate)
 * is made by it and drops its copy at once. A store several instances share (PostgreSQL, Redis)
 * is read on every request: an owner's change must apply on the key's next call on every
 * instance, and a change signal only arrives some milliseconds later (over Redis; without Redis
 * not at all), during which a cached record would let a revoked or narrowed key through.
 */
export function cachesKeyRecords(storage: Pick<Storage, 'kind'>): boolean {
  return storage.kind === 'memory' || storage.kind === 'sqlite';
}

/**
 * The request path of API keys: a presented key becomes its owner's identity with the key's
 * rules, or a refusal. On a store only this server uses (cachesKeyRecords), records are cached
 * for at most CACHE_MS and `forget` drops one at once when it changes; on a shared store they are
 * read on every request. `lastUsedAt` is written behind, at most once a minute.
 */
export class ApiKeyVerifier {
  // Each holds only what is still used (records for CACHE_MS, last-use marks for TOUCH_MS), so a
  // steady stream of new keys does not pile up towards the ceiling. A lifetime of 0 caches nothing
  // (AgedMap answers only entries younger than it).
  private readonly cache: AgedMap<string, ApiKeyRecord>;
  private readonly touched = new AgedMap<string, number>(TOUCH_MS, MAX_CACHED);

  constructor(
    private readonly storage: Storage,
    private readonly config: ResolvedConfig,
    private readonly hasher: ApiKeyHasher | undefined,
    private readonly logger: Logger,
    private readonly onAuth: (outcome: AuthOutcome) => void,
    private readonly now: () => number,
    cache: boolean,
    /** Scopes a rule grants only when the owner holds them too (an MCP gateway server's `allowScopes`). */
    private readonly ownerHeldScopes: () => ReadonlySet<string> = () => new Set(),
  ) {
    const ms = cache ? CACHE_MS : 0;
    this.cache = new AgedMap(ms, MAX_CACHED);
  }

  /**
   * Bumped by every `forget`: a lookup whose read began before a change does not cache what it
   * read (it may be the record as it was, a revoked key still valid for CACHE_MS).
   */
  private forgets = 0;

  forget(id: string): void {
    this.forgets++;
    this.cache.delete(id);
  }

  /**
   * A presented `aib_…` key → its owner's identity with the key's rules. A malformed, truncated,
   * wrong-checksum or foreign key is refused before any store access; the stored hash is compared
   * in constant time. Never logs or returns the key.
   */
  async authenticate(token: string, ip?: string): Promise<AuthResult> {
    if (!this.hasher) return { ok: false, error: new CoreError('INVALID_TOKEN', 'API keys are not enabled on this server') };
    const id = this.hasher.parse(token);
    if (!id) return this.refused('invalid', INVALID());
    let record: ApiKeyRecord | undefined;
    try {
      record = await this.lookup(id);
    } catch (err) {
      return this.refused('unavailable', err instanceof CoreError ? err : new CoreError('UNAVAILABLE', 'storage unavailable'));
    }
    if (!record || !this.hasher.matches(token, record.hash)) return this.refused('invalid', INVALID());
    const now = this.now();
    if (record.revokedAt) return this.refused('revoked', new CoreError('INVALID_TOKEN', 'API key revoked'));
    if (record.expiresAt && Date.parse(record.expiresAt) <= now)
      return this.refused('expired', new CoreError('INVALID_TOKEN', 'API key expired'));
    if (record.allowedIps?.length && !ipAllowed(record.allowedIps, ip)) {
      return this.refused(
        'address',
        new CoreError('FORBIDDEN', 'this API key may not be used from this address', { details: { reason: 'address_not_allowed' } }),
      );
    }
    let ownerAdmin: boolean;
    let ownerScopes: readonly string[] | undefined;
    // Both checks may need the owner's profile: read at most once per request.
    let profile: Promise<OwnerProfile | undefined> | undefined;
    const owner = () => (profile ??= this.ownerProfile(record.userId));
    try {
      ownerAdmin = await this.ownerIsAdmin(record, owner);
      ownerScopes = await this.ownerScopes(record, owner);
    } catch (err) {
      return this.refused('unavailable', err instanceof CoreError ? err : new CoreError('UNAVAILABLE', 'storage unavailable'));
    }
    this.onAuth('ok');
    this.touch(record, now);
    return { ok: true, identity: identityOf(record, this.config, ownerAdmin, ownerScopes) };
  }

  /**
   * The scopes the owner holds now (their last sign-in, as the user directory keeps it), read only
   * when the key holds a scope some rule grants only to a holder who is also the owner (a gateway
   * server's `allowScopes`): a key must not keep a scope its owner lost, nor reach through a key
   * scope (which the owner may give without holding it) what its owner cannot.
   */
  private async ownerScopes(record: ApiKeyRecord, owner: () => Promise<OwnerProfile | undefined>): Promise<readonly string[] | undefined> {
    const named = this.ownerHeldScopes();
    if (named.size === 0 || !record.scopes.some((s) => named.has(s))) return undefined;
    return (await owner())?.scopes ?? [];
  }

  /**
   * The owner's stored profile, read on every call that needs it (never cached: the user directory
   * rewrites it when the owner signs in with other scopes or e-mail, and signals nothing).
   */
  private ownerProfile(userId: string): Promise<OwnerProfile | undefined> {
    return this.storage.get<OwnerProfile>(profileKey(userId));
  }

  /**
   * Is the owner of a key holding the admin scope an administrator now, by this instance's
   * `admin.users`? Asked on every request (never remembered from when the key was made), so
   * removing a user from the listing demotes their keys on the next call. Their profile is read
   * only when administrators are listed by e-mail (for the e-mail and whether it was verified).
   */
  private async ownerIsAdmin(record: ApiKeyRecord, owner: () => Promise<OwnerProfile | undefined>): Promise<boolean> {
    if (!record.scopes.includes(this.config.admin.scope)) return false;
    if (ownerListedAdmin(this.config, record.userId, undefined)) return true;
    if (!listsAdminsByEmail(this.config)) return false;
    return ownerListedAdmin(this.config, record.userId, await owner());
  }

  private refused(outcome: AuthOutcome, error: CoreError): AuthResult {
    this.onAuth(outcome);
    return { ok: false, error };
  }

  private async lookup(id: string): Promise<ApiKeyRecord | undefined> {
    const now = this.now();
    const hit = this.cache.get(id, now);
    if (hit) return hit;
    const forgets = this.forgets;
    const record = await this.storage.get<ApiKeyRecord>(apiKeyKeys.record(id));
    if (record && forgets === this.forgets) this.cache.set(id, record, now);
    else this.cache.delete(id);
    return record;
  }

  /** Record the last use, off the request path and at most once a minute per key on this instance. */
  private touch(record: ApiKeyRecord, now: number): void {
    const last = this.touched.get(record.id, now) ?? (record.lastUsedAt ? Date.parse(record.lastUsedAt) : 0);
    if (now - last < TOUCH_MS) return;
    this.touched.set(record.id, now, now);
    const key = apiKeyKeys.record(record.id);
    const stamp = new Date(now).toISOString();
    void this.storage
      .transact([key], (read) => {
        const r = read<ApiKeyRecord>(key);
        if (!r || (r.lastUsedAt && r.lastUsedAt >= stamp)) return { writes: [], result: undefined };
        return { writes: [{ op: 'set', key, value: { ...r, lastUsedAt: stamp } }], result: undefined };
      })
      .catch((err) =>
        this.logger.warn('api keys: could not record a last use', {
          keyId: record.id,
          error: err instanceof Error ? err.message : String(err),
        }),
      );
  }
}

/**
 * The identity a key acts with: its owner, its own scopes and rules. The admin scope makes it an
 * administrator only while `ownerAdmin` (its owner is listed now); otherwise the scope is dropped,
 * so nothing downstream reads it as a role.
 */
export function identityOf(record: ApiKeyRecord, config: ResolvedConfig, ownerAdmin: boolean, ownerScopes?: readonly string[]): Identity {
  const l = record.limits ?? {};
  const grant: ApiKeyGrant = {
    id: record.id,
    ...(ownerScopes ? { ownerScopes } : {}),
    ...(record.providers ? { providers: record.providers } : {}),
    ...(record.models ? { models: record.models } : {}),
    ...(record.tools ? { tools: record.tools } : {}),
    ...(l.requestsPerMinute ? { requestsPerMinute: l.requestsPerMinute } : {}),
    ...(l.tokensPerMinute ? { tokensPerMinute: l.tokensPerMinute } : {}),
    ...(l.concurrent ? { concurrent: l.concurrent } : {}),
  };
  const adminScope = config.admin.scope;
  const isAdmin = ownerAdmin && record.scopes.includes(adminScope);
  const scopes = isAdmin ? [...record.scopes] : record.scopes.filter((s) => s !== adminScope);
  return { sub: record.userId, scopes, isAdmin, via: 'apiKey', apiKey: grant };
}
