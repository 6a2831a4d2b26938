import { type CoreError, coreErrorOf, isCoreError } from '../../kernel/CoreError.js';
import type { Identity } from '../../kernel/identity.js';
import type { SecurityEvent, SecurityLog } from './SecurityLog.js';

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
 * A refusal answered as something else (an unknown tool, prompt or resource: the key must not
 * learn it exists) is that answer's `cause`, and recorded as the refusal it is.
 */
export function keyRefusalEvent(identity: Identity | null | undefined, err: unknown, site: RefusalSite): SecurityEvent | undefined {
  const grant = identity?.via === 'apiKey' ? identity.apiKey : undefined;
  if (!grant) return undefined;
  const core = refusalOf(coreErrorOf(err));
  if (!core) return undefined;
  const rule = core.details!.reason as string;
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

/** `err` when it is a refusal by a key's rules or limits, else the one it conceals (its cause). */
function refusalOf(err: CoreError | undefined): CoreError | undefined {
  const hidden: unknown = err?.cause;
  for (const e of [err, hidden]) if (isCoreError(e) && RULES.has(String(e.details?.reason))) return e;
  return undefined;
}

/**
 * Record `err` as its `key_refused` line when it is (or conceals) a refusal of the caller's API
 * key: for refusals answered outside a procedure call (MCP resources, prompts and completions, the
 * gateway's upstream items), which the base middleware never sees. True when a line was written.
 */
export function recordKeyRefusal(
  security: Pick<SecurityLog, 'record'>,
  identity: Identity | null | undefined,
  err: unknown,
  site: RefusalSite,
): boolean {
  const event = keyRefusalEvent(identity, err, site);
  if (event) security.record(event);
  return event !== undefined;
}
