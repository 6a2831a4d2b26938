import type { AnyRouter } from '@trpc/server';
import type { ResolvedConfig } from '../config/schema.js';
import { BUILT_IN_KEY_SCOPES } from '../services/apiKeys/keyScopes.js';
import { keyAllowsProcedure } from '../services/apiKeys/keyRules.js';
import { procedureIndex } from './invoke.js';
import { mcpAccessRulesActive } from '../services/security/accessRules.js';
import { CoreError } from '../kernel/CoreError.js';
import type { Identity } from '../kernel/identity.js';
import { isBuiltInPath } from '../kernel/namespaces.js';
import type { KeyAccess, ProcedureMeta } from './meta.js';

/** How a call reached a procedure. Recorded for logs; it never changes the decision. */
export type CallKind = 'procedure' | 'tool' | 'prompt' | 'resource';

import type { AccessDecision } from './AccessDecision.js';

export type { AccessDecision };

const ALLOWED: AccessDecision = { allowed: true };

/** A procedure published as an MCP tool (or marked countsAsToolCall): its calls count against `maxToolCalls` on every entry point. */
export const countsAsToolCall = (meta: ProcedureMeta | undefined): boolean =>
  (meta?.mcp !== undefined && meta.mcp.tool !== false) || meta?.countsAsToolCall === true;

/** The MCP tool name of a procedure: `meta.mcp.name`, else the last path segment. */
export function toolNameOf(path: string, meta: ProcedureMeta | undefined): string {
  return meta?.mcp?.name ?? path.slice(path.lastIndexOf('.') + 1);
}

/**
 * The scope our own OAuth access tokens need to run procedures (`oauth.callScope`), or null when
 * it is not checked (turned off, or not among the scopes clients can get).
 */
export function callScopeOf(config: ResolvedConfig): string | null {
  const scope = config.oauth.callScope;
  return scope && config.oauth.scopesSupported.includes(scope) ? scope : null;
}

/**
 * The scope rule: an access token we issued (via 'oauth') runs procedures only with the call
 * scope. Scopes are hierarchical (MCP: a broader scope implies the narrower ones): the admin
 * scope implies the call scope. JWT and API-key identities carry other issuers' or their own
 * scope vocabularies and are governed by their own rules (`mcp.auth.jwt.requiredScopes`, key rules).
 */
function scopeDecision(config: ResolvedConfig, identity: Identity): AccessDecision {
  if (identity.via !== 'oauth') return ALLOWED;
  const need = callScopeOf(config);
  if (!need || identity.scopes.includes(need) || identity.scopes.includes(config.admin.scope)) return ALLOWED;
  return {
    allowed: false,
    code: 'INSUFFICIENT_SCOPE',
    rule: 'scope',
    message: `this call needs the "${need}" scope`,
    requiredScopes: [need],
  };
}

/**
 * Who among API keys may call a procedure (`meta.keyAccess`). A built-in procedure that does not
 * say is refused to keys: a procedure added without a decision must not open the owner's account
 * to every key (the key access test fails on it too). A custom procedure that does not say is
 * open to keys unless it writes: keys exist to call the operator's procedures, and the operator
 * marks the ones that change an account.
 */
export function keyAccessOf(path: string, meta: ProcedureMeta | undefined): KeyAccess {
  if (meta?.keyAccess) return meta.keyAccess;
  return isBuiltInPath(path) || meta?.writes ? 'none' : 'any';
}

const keyScopeCache = new WeakMap<AnyRouter, ReadonlySet<string>>();

/** Every key scope of a loaded router: the built-in ones and any a custom procedure's `keyAccess` names. */
export function keyScopesOf(router: AnyRouter): ReadonlySet<string> {
  let scopes = keyScopeCache.get(router);
  if (!scopes) {
    const all = new Set(BUILT_IN_KEY_SCOPES);
    for (const { path, meta } of procedureIndex(router).values()) {
      const access = keyAccessOf(path, meta);
      if (typeof access === 'object') all.add(access.scope);
    }
    scopes = all;
    keyScopeCache.set(router, scopes);
  }
  return scopes;
}

/**
 * Whether an API key's own rules (keyAccess, its scopes, its tools rule) let it call `path`: what
 * a listing shows a key (MCP tools/list), so it offers only what the key may call. Not an access
 * decision (a call still gets accessDecision), so it is not counted as one.
 */
export function keyMayCall(path: string, meta: ProcedureMeta | undefined, identity: Identity): boolean {
  return keyDecision(path, meta, identity).allowed;
}

/**
 * What keyMayCall refuses, as the error a call of `path` through this key would get (its rule in
 * `details.reason`), for the security log of refusals answered without a call (an MCP completion
 * of a prompt the key may not get). Undefined when the key's rules admit it.
 */
export function keyRefusalOf(path: string, meta: ProcedureMeta | undefined, identity: Identity): CoreError | undefined {
  const d = keyDecision(path, meta, identity);
  return d.allowed ? undefined : decisionError(d);
}

/**
 * The key rule: an identity established by an API key calls only what `keyAccess` grants it, and
 * of that only what the key's own `tools` rule names, when it has one.
 */
function keyDecision(path: string, meta: ProcedureMeta | undefined, identity: Identity): AccessDecision {
  const access = keyAccessOf(path, meta);
  // The rule names a procedure by its path, or by its MCP name when it is published on MCP: the last
  // segment of a procedure off MCP is no name of it (a rule admitting the tool `getBudget` must not
  // admit admin.getBudget, nor `get*` keys.get).
  const mcpName = meta?.mcp ? toolNameOf(path, meta) : undefined;
  if (access !== 'none' && meta?.keyToolsRule !== 'byTool' && !keyAllowsProcedure(identity.apiKey, path, mcpName)) {
    return {
      allowed: false,
      code: 'FORBIDDEN',
      rule: 'key',
      message: `this API key may not call ${path} (its tools rule)`,
      details: { reason: 'key_tool_not_allowed' },
    };
  }
  if (access === 'any') return ALLOWED;
  if (access === 'none') {
    return {
      allowed: false,
      code: 'FORBIDDEN',
      rule: 'key',
      message: `API keys cannot call ${path}; sign in as the key's owner`,
      details: { reason: 'key_not_allowed' },
    };
  }
  if (identity.scopes.includes(access.scope)) return ALLOWED;
  return {
    allowed: false,
    code: 'FORBIDDEN',
    rule: 'key',
    message: `this API key needs the "${access.scope}" scope to call ${path}`,
    details: { reason: 'key_scope_required', scope: access.scope },
  };
}

/**
 * Is authentication configured at all? `authType: 'none'` means the operator chose an open
 * server; every other type means anonymous callers are the exception, not the rule.
 */
export function authConfigured(config: ResolvedConfig): boolean {
  return config.auth.mode !== 'none';
}

/**
 * THE access policy: may this identity call this procedure? One function for every entry point
 * (/trpc, /typedrpc, /rpc, MCP tools, prompts and resources): the answer depends on the
 * procedure, the identity and the config, never on the transport, so the same procedure is
 * governed identically wherever it is reached. The rules, in order (docs/security.md has the table):
 *
 * 1. `meta.access: 'admin'` (adminProcedure): an administrator, whatever the auth type.
 * 2. `meta.access: 'user'` (protectedProcedure): any authenticated identity, whatever the auth type.
 * 3. `meta.writes` (changes files or workspaces): never anonymous once authentication is
 *    configured, whatever `requireAuthForToolsCall`, `publicTools` or `authEnforcement` say.
 * 4. A procedure published on MCP (`meta.mcp`): `requireAuthForToolsCall` needs an identity
 *    unless it is public (`meta.mcp.public` or its tool name in `publicTools`); lifted by
 *    authType 'none' and by `authEnforcement: { enabled: true, requireAuth: false }`.
 * 5. Anything else is open.
 *
 * An identified caller holding one of our OAuth tokens also needs the call scope (scopeDecision).
 * A caller using an API key calls only what the procedure's `keyAccess` grants keys (keyDecision),
 * before any other rule; its administrator flag was derived from its owner's standing at this
 * request (ApiKeyVerifier), not from when it was made.
 *
 * A credential that failed verification never gets here: it is refused before any rule.
 */
let decisionsMade = 0;

/**
 * How many access decisions this process has made: the tests that pin "one decision per call" on
 * every entry point read it before and after a call (test/e2e/entrySequence.test.ts).
 */
export function accessDecisionsMade(): number {
  return decisionsMade;
}

/**
 * A refusal as the error its call answers with: the scopes a step-up needs, else the rule's
 * details (a key's `reason`). The one form for calls refused in the base middleware and for
 * entry points that invoke nothing (/v1/messages/count_tokens).
 */
export function decisionError(d: Extract<AccessDecision, { allowed: false }>): CoreError {
  const details = d.requiredScopes ? { requiredScopes: d.requiredScopes } : d.details;
  return new CoreError(d.code, d.message, details ? { details } : {});
}

export function accessDecision(
  config: ResolvedConfig,
  path: string,
  meta: ProcedureMeta | undefined,
  identity: Identity | null,
): AccessDecision {
  decisionsMade++;
  if (identity?.via === 'apiKey') {
    const key = keyDecision(path, meta, identity);
    if (!key.allowed) return key;
  }
  const access = meta?.access;
  if (access === 'admin') {
    if (!identity) return { allowed: false, code: 'UNAUTHORIZED', rule: 'admin', message: 'authentication required' };
    return identity.isAdmin
      ? scopeDecision(config, identity)
      : { allowed: false, code: 'FORBIDDEN', rule: 'admin', message: 'administrator access required' };
  }
  if (identity) return scopeDecision(config, identity);
  if (access === 'user') return { allowed: false, code: 'UNAUTHORIZED', rule: 'user', message: 'authentication required' };
  if (!authConfigured(config)) return ALLOWED;
  if (meta?.writes)
    return { allowed: false, code: 'UNAUTHORIZED', rule: 'writes', message: 'authentication required to change files or workspaces' };
  if (meta?.mcp && toolCallNeedsAuth(config, meta, toolNameOf(path, meta))) {
    return { allowed: false, code: 'UNAUTHORIZED', rule: 'toolsCall', message: 'authentication required for this tool' };
  }
  return ALLOWED;
}

/**
 * MCP access rules 2 and 3 (`requireAuthForToolsCall`, `publicTools`) for a procedure published
 * on MCP. Part of {@link accessDecision}; exported for callers that only need this rule.
 */
export function toolCallNeedsAuth(config: ResolvedConfig, meta: ProcedureMeta | undefined, toolName: string | undefined): boolean {
  const auth = config.mcp.auth;
  if (!auth.requireAuthForToolsCall || !mcpAccessRulesActive(config)) return false;
  const isPublic = meta?.mcp?.public === true || (toolName !== undefined && auth.publicTools.includes(toolName));
  return !isPublic;
}
