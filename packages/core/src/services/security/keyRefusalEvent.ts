import { coreErrorOf } from '../../kernel/CoreError.js';
import type { Identity } from '../../kernel/identity.js';
import type { SecurityEvent } from './SecurityLog.js';

/**
 * The rules and limits of an API key that refuse a call (`details.reason` of the refusal), each
 * decided in one place: the access policy (`key_not_allowed`, `key_scope_required`,
 * `key_tool_not_allowed`), the resource check (`key_resource_not_allowed`), the model rule
 * (`key_provider_not_allowed`, `key_model_not_allowed`), KeyLimits (`key_requests_limit`,
 * `key_tokens_limit`, `key_concurrent_limit`), the budget (`key_budget_exceeded`,
 * `key_model_not_priced`) and the keys service (`key_manages_keys`).
 */
export const KEY_REFUSAL_RULES = [
  'key_not_allowed',
  'key_scope_required',
  'key_tool_not_allowed',
  'key_resource_not_allowed',
  'key_provider_not_allowed',
  'key_model_not_allowed',
  'key_requests_limit',
  'key_tokens_limit',
  'key_concurrent_limit',
  'key_budget_exceeded',
  'key_model_not_priced',
  'key_manages_keys',
] as const;
export type KeyRefusalRule = (typeof KEY_REFUSAL_RULES)[number];

const RULES: ReadonlySet<string> = new Set(KEY_REFUSAL_RULES);

/** Where a refusal was answered: the entry point, the caller's address, what was asked. */
export interface RefusalSite {
  transport: string;
  ip?: string | undefined;
  /** The procedure path, or the HTTP path of a request refused before any call was read. */
  path?: string | undefined;
}

/**
 * The one shape of a refusal by an API key's own rules or limits in the security log
 * (`key_refused`), the same on every entry point: the error code (`reason`) and its message, the
 * rule (`rule`), the key's id (`keyId`; never the key), the owner (`sub`), the entry point, the
 * address and the path. Undefined when `err` is not such a refusal of a key-authenticated caller.
 */
export function keyRefusalEvent(identity: Identity | null | undefined, err: unknown, site: RefusalSite): SecurityEvent | undefined {
  const grant = identity?.via === 'apiKey' ? identity.apiKey : undefined;
  if (!grant) return undefined;
  const core = coreErrorOf(err);
  const rule = core?.details?.reason;
  if (!core || typeof rule !== 'string' || !RULES.has(rule)) return undefined;
  return {
    type: 'key_refused',
    reason: core.appCode,
    message: core.message,
    transport: site.transport,
    ...(site.ip ? { ip: site.ip } : {}),
    sub: identity!.sub,
    ...(site.path ? { path: site.path } : {}),
    detail: { keyId: grant.id, rule },
  };
}
