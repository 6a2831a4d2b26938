import { hkdfSync } from 'node:crypto';
import type { ResolvedConfig } from '../../config/schema.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { Logger } from '../../kernel/Logger.js';
import type { AuthResult } from '../../kernel/identity.js';
import type { Signals } from '../../kernel/Signals.js';
import type { Storage } from '../../kernel/Storage.js';
import type { Identity } from '../../kernel/identity.js';
import { ApiKeyHasher, displayPrefix } from './apiKeyFormat.js';
import { apiKeyKeys, keyRulesPatchSchema, keyRulesSchema, type ApiKeyRecord, type ApiKeyView, type KeyRules } from './apiKeyTypes.js';
import { ApiKeyVerifier, cachesKeyRecords, type AuthOutcome } from './ApiKeyVerifier.js';
import { keySpendKey, keyUsageView, type KeySpendRecord, type KeyUsageView } from './keySpend.js';
import type { UserDirectory } from '../directory/UserDirectory.js';
import type { KeyLimits } from './KeyLimits.js';
import { KEY_SCOPES } from './keyScopes.js';
import { ownerListedAdmin } from './ownerAuthority.js';

/** Signal topic: a key changed (revoked, rotated, updated); the message is its id. */
export const KEY_CHANGED = 'apikeys:changed';

/** Who acts on keys: the caller, and whether they act as an administrator on someone else's. */
export interface KeyActor {
  identity: Identity;
  /** The administrator variants: any owner. */
  asAdmin: boolean;
  /**
   * The key scopes of this server (every scope a procedure's `keyAccess` names): an owner may give
   * them to a key without holding them, since they only let the key do what its owner can.
   */
  keyScopes?: ReadonlySet<string>;
}

export type KeyUpdate = Partial<KeyRules>;

/** The HMAC secret: `apiKeys.secret`, else derived from another server secret (domain-separated). */
function resolveSecret(config: ResolvedConfig): Buffer | undefined {
  if (config.apiKeys.secret) return Buffer.from(config.apiKeys.secret);
  const base = config.jwt.secret ?? config.oauth.encryptionKey ?? config.billing.vaultKey;
  if (!base) return undefined;
  return Buffer.from(hkdfSync('sha256', base, 'ai-backend', 'api-key-hmac', 32));
}

export function toView(r: ApiKeyRecord, now = Date.now()): ApiKeyView {
  const { hash: _hash, ...rest } = r;
  const status = r.revokedAt ? 'revoked' : r.expiresAt && Date.parse(r.expiresAt) <= now ? 'expired' : 'active';
  return { ...rest, prefix: displayPrefix(r.id), status };
}

export interface ApiKeyServiceOptions {
  /** Per-key rate limits in the shared store. */
  limits: KeyLimits;
  /** Told the outcome of every presented key (metrics; never the key). */
  onAuth?: (outcome: AuthOutcome) => void;
  /** Clock, for tests. Default Date.now. */
  now?: () => number;
  /**
   * The scopes that count for a key only while its owner holds them too (every MCP gateway server's
   * `allowScopes`, asked per request since servers are added at run time). Default none.
   */
  ownerHeldScopes?: () => ReadonlySet<string>;
}

/**
 * API keys (docs/api-keys.md): create, list, update, revoke and rotate them, and turn a presented
 * key into the identity of its owner with the key's own rules. Records live in the main store
 * (`apikey:<id>` plus an owner index), so every backend keeps them; verified records are cached
 * per instance for at most a second and dropped at once when any instance signals a change.
 */
export class ApiKeyService {
  /** Per-key rate limits (requests and tokens per minute, concurrent calls). */
  readonly limits: KeyLimits;
  private readonly now: () => number;
  private readonly hasher: ApiKeyHasher | undefined;
  private readonly verifier: ApiKeyVerifier;

  constructor(
    private readonly storage: Storage,
    private readonly config: ResolvedConfig,
    private readonly signals: Signals,
    private readonly users: Pick<UserDirectory, 'find'>,
    private readonly logger: Logger,
    opts: ApiKeyServiceOptions,
  ) {
    this.limits = opts.limits;
    this.now = opts.now ?? Date.now;
    const secret = config.apiKeys.enabled ? resolveSecret(config) : undefined;
    this.hasher = secret ? new ApiKeyHasher(secret) : undefined;
    this.verifier = new ApiKeyVerifier(
      storage,
      config,
      this.hasher,
      logger,
      opts.onAuth ?? (() => undefined),
      this.now,
      cachesKeyRecords(storage),
      opts.ownerHeldScopes,
    );
    signals.subscribe(KEY_CHANGED, (id) => this.verifier.forget(id));
  }

  /**
   * A presented `aib_…` key → its owner's identity with the key's rules (ApiKeyVerifier): refused
   * without a store lookup when malformed or foreign, compared in constant time, never logged.
   */
  authenticate(token: string, ip?: string): Promise<AuthResult> {
    return this.verifier.authenticate(token, ip);
  }

  get enabled(): boolean {
    return this.hasher !== undefined;
  }

  private requireHasher(): ApiKeyHasher {
    if (!this.hasher) {
      throw new CoreError(
        'NOT_CONFIGURED',
        this.config.apiKeys.enabled
          ? 'API keys need a secret: set apiKeys.secret (or jwt.secret, oauth.encryptionKey or billing.vaultKey)'
          : 'API keys are disabled (apiKeys.enabled)',
      );
    }
    return this.hasher;
  }

  /**
   * The scopes `owner` may give a key: key scopes (`actor.keyScopes`) freely; the admin scope only
   * when the owner is listed in `admin.users` now (never because a token carries the scope: a
   * demoted administrator's token may still hold it); any other scope only when the owner holds it.
   */
  private async checkScopes(actor: KeyActor, ownerId: string, scopes: readonly string[]): Promise<void> {
    if (scopes.length === 0) return;
    const self = actor.identity.sub === ownerId;
    const owner = self ? { profile: actor.identity } : await this.users.find(ownerId);
    const own = owner.profile?.scopes ?? [];
    const adminScope = this.config.admin.scope;
    const outside = scopes.filter((s) => {
      if (s === adminScope) return !ownerListedAdmin(this.config, ownerId, owner.profile);
      return !(actor.keyScopes?.has(s) || own.includes(s));
    });
    if (outside.length) {
      const admin = outside.includes(adminScope) ? ` (${adminScope} only for a user listed in admin.users)` : '';
      throw new CoreError('FORBIDDEN', `a key's scopes must be key scopes or held by its owner; not held: ${outside.join(', ')}${admin}`, {
        details: { reason: 'scope_not_held', scopes: outside },
      });
    }
  }

  /** Create a key for `ownerId`. The key itself is in the answer only this once. */
  async create(actor: KeyActor, ownerId: string, input: KeyRules): Promise<{ key: string; apiKey: ApiKeyView }> {
    const hasher = this.requireHasher();
    const rules = keyRulesSchema().parse(input);
    this.assertMayActOn(actor, ownerId);
    if (rules.expiresAt && Date.parse(rules.expiresAt) <= this.now())
      throw new CoreError('INVALID_PARAMS', 'expiresAt is in the past', { details: { field: 'expiresAt' } });
    await this.checkScopes(actor, ownerId, rules.scopes ?? []);
    return this.insert(hasher, ownerId, rules, actor.identity.sub);
  }

  /** Write a new key record with rules already checked. */
  private async insert(hasher: ApiKeyHasher, ownerId: string, rules: KeyRules, by: string): Promise<{ key: string; apiKey: ApiKeyView }> {
    const held = (await this.listRecords(ownerId)).filter((r) => !r.revokedAt).length;
    if (held >= this.config.apiKeys.maxPerUser)
      throw new CoreError('CONFLICT', `at most ${this.config.apiKeys.maxPerUser} keys per user; revoke one first`, {
        details: { reason: 'too_many_keys' },
      });
    const { key, id } = hasher.mint();
    const at = new Date(this.now()).toISOString();
    const record: ApiKeyRecord = {
      ...rules,
      id,
      userId: ownerId,
      hash: hasher.hash(key),
      scopes: rules.scopes ?? [],
      expiresAt: utc(rules.expiresAt),
      createdAt: at,
      createdBy: by,
      updatedAt: at,
      lastUsedAt: null,
      revokedAt: null,
    };
    await this.storage.transact([apiKeyKeys.record(id)], (read) => {
      if (read(apiKeyKeys.record(id))) throw new CoreError('CONFLICT', 'key id collision; try again');
      return {
        writes: [
          { op: 'set', key: apiKeyKeys.record(id), value: record },
          { op: 'set', key: apiKeyKeys.owner(ownerId, id), value: 1 },
        ],
        result: undefined,
      };
    });
    this.logger.info('api key created', { keyId: id, userId: ownerId, by });
    return { key, apiKey: toView(record, this.now()) };
  }

  private assertMayActOn(actor: KeyActor, ownerId: string): void {
    if (actor.identity.sub !== ownerId && !(actor.asAdmin && actor.identity.isAdmin)) throw new CoreError('NOT_FOUND', 'no such API key');
    // A key cannot mint, change or rotate keys: that would let a narrow key escape its own rules.
    if (actor.identity.via === 'apiKey')
      throw new CoreError('FORBIDDEN', 'API keys cannot manage API keys; sign in as the owner', {
        details: { reason: 'key_manages_keys' },
      });
  }

  private async listRecords(ownerId: string): Promise<ApiKeyRecord[]> {
    const index = await this.storage.keys(apiKeyKeys.ownerPrefix(ownerId));
    const ids = index.map((k) => k.slice(k.lastIndexOf(':') + 1));
    const records = await this.storage.getMany<ApiKeyRecord>(ids.map(apiKeyKeys.record));
    return records.filter((r): r is ApiKeyRecord => r !== undefined && r.userId === ownerId);
  }

  /** A user's keys (newest first); never their hashes. */
  async list(actor: KeyActor, ownerId: string, opts: { includeRevoked?: boolean } = {}): Promise<ApiKeyView[]> {
    if (actor.identity.sub !== ownerId && !(actor.asAdmin && actor.identity.isAdmin)) throw new CoreError('NOT_FOUND', 'no such user');
    const now = this.now();
    const only = this.onlySelf(actor);
    return (await this.listRecords(ownerId))
      .filter((r) => (opts.includeRevoked || !r.revokedAt) && (only === undefined || r.id === only))
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt))
      .map((r) => toView(r, now));
  }

  /** One key; NOT_FOUND when it is not the actor's (unless an administrator asks). */
  async get(actor: KeyActor, id: string): Promise<ApiKeyRecord> {
    const record = /^[0-9A-Za-z]{12}$/.test(id) ? await this.storage.get<ApiKeyRecord>(apiKeyKeys.record(id)) : undefined;
    if (!record || (record.userId !== actor.identity.sub && !(actor.asAdmin && actor.identity.isAdmin)))
      throw new CoreError('NOT_FOUND', 'no such API key');
    const only = this.onlySelf(actor);
    if (only !== undefined && record.id !== only) throw new CoreError('NOT_FOUND', 'no such API key');
    return record;
  }

  /**
   * The one key a caller may see among its owner's keys in what its owner's own procedures answer
   * (spend per key, the key of each usage row): itself when it is a key without `keys:read`, else
   * undefined (every key).
   */
  keySeenBy(identity: Identity): string | undefined {
    return this.onlySelf({ identity, asAdmin: false });
  }

  /**
   * A key sees only itself among its owner's keys unless it holds `keys:read` (or acts as an
   * administrator on the admin variants): the id of the one key it may see, else undefined.
   */
  private onlySelf(actor: KeyActor): string | undefined {
    const grant = actor.identity.apiKey;
    if (actor.identity.via !== 'apiKey' || !grant) return undefined;
    if (actor.identity.scopes.includes(KEY_SCOPES.keysRead) || (actor.asAdmin && actor.identity.isAdmin)) return undefined;
    return grant.id;
  }

  /** A key's calls and spend per period against its budget (the caller already got the key through `get`). */
  async usage(id: string): Promise<KeyUsageView> {
    const [record, spend] = await this.storage.getMany<unknown>([apiKeyKeys.record(id), keySpendKey(id)]);
    return keyUsageView(spend as KeySpendRecord | undefined, (record as ApiKeyRecord | undefined)?.budget, new Date(this.now()));
  }

  /**
   * Spend per key of one user (revoked keys included, newest first): calls, and tokens and money
   * today, this month and in total. For billing.getUsageAnalytics; one prefix scan and two reads.
   * `only`: the one key to answer for (keySeenBy).
   */
  async spendByKey(
    userId: string,
    only?: string,
  ): Promise<
    Array<
      { id: string; name: string; status: ApiKeyView['status']; calls: number } & Record<
        'day' | 'month' | 'total',
        { tokens: number; usd: number; byokTokens: number }
      >
    >
  > {
    const records = (await this.listRecords(userId))
      .filter((r) => only === undefined || r.id === only)
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt));
    const spends = await this.storage.getMany<KeySpendRecord>(records.map((r) => keySpendKey(r.id)));
    const now = this.now();
    return records.map((r, i) => {
      const u = keyUsageView(spends[i], r.budget, new Date(now));
      const of = (p: 'day' | 'month' | 'total') => u.periods.find((x) => x.period === p)!.spent;
      return {
        id: r.id,
        name: r.name,
        status: toView(r, now).status,
        calls: u.calls,
        day: of('day'),
        month: of('month'),
        total: of('total'),
      };
    });
  }

  /** Change a key's rules; the change applies on the key's next call on every instance (ApiKeyVerifier). */
  async update(actor: KeyActor, id: string, patch: KeyUpdate): Promise<ApiKeyView> {
    const current = await this.get(actor, id);
    this.assertMayActOn(actor, current.userId);
    const parsed = keyRulesPatchSchema().parse(patch);
    if (parsed.scopes) await this.checkScopes(actor, current.userId, parsed.scopes);
    const next = await this.change(id, (r) => {
      if (r.revokedAt) throw new CoreError('CONFLICT', 'this API key is revoked');
      // A rotated key's expiry is the end of its grace period: it may be brought forward, never
      // moved later or removed, or the old key would outlive its rotation.
      if (
        r.rotatedTo &&
        parsed.expiresAt !== undefined &&
        (parsed.expiresAt === null || !r.expiresAt || Date.parse(parsed.expiresAt) > Date.parse(r.expiresAt))
      ) {
        throw new CoreError('CONFLICT', 'this API key was rotated: its expiry can be brought forward, not extended', {
          details: { reason: 'rotated_key_expiry' },
        });
      }
      const out: ApiKeyRecord = { ...r, updatedAt: new Date(this.now()).toISOString() };
      for (const [k, v] of Object.entries(parsed) as Array<[keyof KeyRules, unknown]>) {
        if (v === undefined) continue;
        (out as unknown as Record<string, unknown>)[k] = k === 'expiresAt' ? utc(v as string | null) : v;
      }
      return out;
    });
    return toView(next, this.now());
  }

  /** Revoke a key: refused on its next call on every instance (ApiKeyVerifier). */
  async revoke(actor: KeyActor, id: string): Promise<ApiKeyView> {
    const current = await this.get(actor, id);
    this.assertMayActOn(actor, current.userId);
    const next = await this.change(id, (r) =>
      r.revokedAt ? r : { ...r, revokedAt: new Date(this.now()).toISOString(), updatedAt: new Date(this.now()).toISOString() },
    );
    this.logger.info('api key revoked', { keyId: id, userId: next.userId, by: actor.identity.sub });
    return toView(next, this.now());
  }

  /**
   * A new key with the same rules; the old one stops at once, or after `graceSec` (its expiry is
   * moved to the end of the grace period), so an app can switch without downtime.
   */
  async rotate(
    actor: KeyActor,
    id: string,
    graceSec = this.config.apiKeys.defaultRotateGraceSec,
  ): Promise<{ key: string; apiKey: ApiKeyView; previous: ApiKeyView }> {
    const current = await this.get(actor, id);
    this.assertMayActOn(actor, current.userId);
    const refusal = (r: ApiKeyRecord) =>
      r.revokedAt
        ? 'this API key is revoked'
        : r.rotatedTo
          ? 'this API key was already rotated; rotate its successor'
          : r.expiresAt && Date.parse(r.expiresAt) <= this.now()
            ? 'this API key has expired; create a new one'
            : null;
    const early = refusal(current);
    if (early) throw new CoreError('CONFLICT', early);
    const {
      hash: _h,
      id: _i,
      userId: _u,
      createdAt: _c,
      createdBy: _b,
      updatedAt: _d,
      lastUsedAt: _l,
      revokedAt: _r,
      rotatedTo: _t,
      ...rules
    } = current;
    // Same rules as the old key: they were checked when they were set.
    const created = await this.insert(this.requireHasher(), current.userId, rules, actor.identity.sub);
    const at = this.now();
    let previous: ApiKeyRecord;
    try {
      previous = await this.change(id, (r) => {
        const late = refusal(r); // a rotation or revocation that raced this one
        if (late) throw new CoreError('CONFLICT', late);
        const stamp = new Date(at).toISOString();
        if (graceSec <= 0) return { ...r, rotatedTo: created.apiKey.id, revokedAt: stamp, updatedAt: stamp };
        const end = new Date(at + graceSec * 1000).toISOString();
        return {
          ...r,
          rotatedTo: created.apiKey.id,
          expiresAt: r.expiresAt && Date.parse(r.expiresAt) < Date.parse(end) ? r.expiresAt : end,
          updatedAt: stamp,
        };
      });
    } catch (err) {
      // The successor was made for nothing: it must not stay usable.
      await this.change(created.apiKey.id, (r) => ({ ...r, revokedAt: new Date(this.now()).toISOString() })).catch(() => undefined);
      throw err;
    }
    return { ...created, previous: toView(previous, this.now()) };
  }

  private async change(id: string, fn: (r: ApiKeyRecord) => ApiKeyRecord): Promise<ApiKeyRecord> {
    const key = apiKeyKeys.record(id);
    const next = await this.storage.transact([key], (read) => {
      const r = read<ApiKeyRecord>(key);
      if (!r) throw new CoreError('NOT_FOUND', 'no such API key');
      const out = fn(r);
      return { writes: out === r ? [] : [{ op: 'set', key, value: out }], result: out };
    });
    this.verifier.forget(id);
    await this.signals.publish(KEY_CHANGED, id);
    return next;
  }
}

/**
 * An expiry as stored: UTC (`…Z`), whatever offset the caller wrote it in, so stored expiries
 * compare as instants (a `+14:00` expiry is not "later" than the same instant in `Z`).
 */
function utc(at: string | null | undefined): string | null {
  return at ? new Date(at).toISOString() : null;
}
