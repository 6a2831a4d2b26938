import { isIP } from 'node:net';
import { z } from '../../lib/zod.js';
import { once } from '../../lib/once.js';
import { MAX_BUDGET_USD } from '../../config/sections/budget.js';
import { NAMED_PROVIDER_ID } from '../../config/sections/aiProviders.js';
import { OWNER_LISTED } from '../../kernel/ownerListings.js';

const enc = encodeURIComponent;
/** Storage keys of API keys (records in the main store). */
export const apiKeyKeys = {
  record: (id: string) => `apikey:${id}`,
  /** The owner index: `apikeyowner:<user>:<id>` (a prefix listing gives a user's keys). */
  ownerPrefix: (userId: string) => `${OWNER_LISTED.apiKeyOwners}${enc(userId)}:`,
  owner: (userId: string, id: string) => `${OWNER_LISTED.apiKeyOwners}${enc(userId)}:${id}`,
};

/** Budget periods of a key: the UTC day, the UTC month, and the key's whole life. */
export const KEY_BUDGET_PERIODS = ['day', 'month', 'total'] as const;
export type KeyBudgetPeriod = (typeof KEY_BUDGET_PERIODS)[number];

const limit = once(() =>
  z.strictObject({
    /** Tokens (input plus output, platform-paid calls, fee not counted) in the period. */
    tokens: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
    /** Provider cost in USD at the pricing table's prices in the period. */
    usd: z.number().min(0).max(MAX_BUDGET_USD).optional(),
  }),
);
const keyBudgetSchema = once(() => z.strictObject({ day: limit().optional(), month: limit().optional(), total: limit().optional() }));
export type KeyBudget = z.output<ReturnType<typeof keyBudgetSchema>>;

const keyLimitsSchema = once(() =>
  z.strictObject({
    /** Procedure calls per minute through this key (every entry point, every instance). */
    requestsPerMinute: z.number().int().min(1).max(1_000_000).optional(),
    /** Tokens per minute used by AI calls through this key (counted when a call ends). */
    tokensPerMinute: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
    /** AI calls running at once through this key. */
    concurrent: z.number().int().min(1).max(10_000).optional(),
  }),
);
export type KeyLimits = z.output<ReturnType<typeof keyLimitsSchema>>;

const pattern = () => z.string().min(1).max(200);
const address = () =>
  z
    .string()
    .max(64)
    .refine((s) => {
      const [ip, bits, ...rest] = s.split('/');
      if (rest.length || !ip || !isIP(ip)) return false;
      if (bits === undefined) return true;
      const max = isIP(ip) === 4 ? 32 : 128;
      return /^\d{1,3}$/.test(bits) && Number(bits) <= max;
    }, 'an IP address or CIDR range (203.0.113.0/24, 2001:db8::/32)');

/** What a key may do, set at creation and changed by keys.update. */
export const keyRulesSchema = once(() =>
  z.strictObject({
    name: z.string().trim().min(1).max(100),
    /** A subset of the owner's scopes. Default none. */
    scopes: z.array(z.string().min(1).max(100)).max(50).optional(),
    /** Providers the key may call. Absent: any the server allows. */
    providers: z.array(z.string().regex(NAMED_PROVIDER_ID, 'a provider id')).max(20).optional(),
    /** micromatch globs over `model` or `provider/model`. Absent: any the server allows. */
    models: z.array(pattern()).max(50).optional(),
    /**
     * micromatch globs over procedure paths (`ai.generateText`, `weather.*`) or MCP tool names the
     * key may call. It only narrows: a procedure must also be open to the key (`keyAccess`).
     * Absent: whatever `keyAccess` opens to it.
     */
    tools: z.array(pattern()).max(50).optional(),
    budget: keyBudgetSchema().optional(),
    limits: keyLimitsSchema().optional(),
    /** ISO time after which the key is refused; null: never. */
    expiresAt: z.iso.datetime({ offset: true }).nullable().optional(),
    /** Client addresses (IPs or CIDR ranges) the key may be used from. Absent: any. */
    allowedIps: z.array(address()).max(50).optional(),
    /** Free-form labels for your own bookkeeping (string values, at most 20). */
    metadata: z
      .record(z.string().min(1).max(64), z.string().max(500))
      .refine((m) => Object.keys(m).length <= 20, 'at most 20 entries')
      .optional(),
  }),
);
export type KeyRules = z.output<ReturnType<typeof keyRulesSchema>>;

/** keys.update's patch: every rule optional (the router adds the key id). */
export const keyRulesPatchSchema = once(() => keyRulesSchema().partial());

/** `apikey:<id>`: a key as stored. `hash` never leaves the service. */
export interface ApiKeyRecord extends Omit<KeyRules, 'expiresAt'> {
  id: string;
  userId: string;
  hash: string;
  scopes: string[];
  expiresAt: string | null;
  createdAt: string;
  createdBy: string;
  updatedAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  /** Rotation: the key that replaced this one (the old key's expiry is the end of its grace period). */
  rotatedTo?: string;
}

/** A key as the procedures show it: every field but the hash. */
export type ApiKeyView = Omit<ApiKeyRecord, 'hash'> & { prefix: string; status: 'active' | 'expired' | 'revoked' };
