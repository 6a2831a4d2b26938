import { oauthConfigProblems, type AuthFacts } from './authMode.js';

/** `mcp.auth.authType`: who may sign in, and how. */
export type AuthMode = 'oauth' | 'jwt' | 'both' | 'none';

/**
 * The bearer tokens the server verifies, one case per set of verifiers: 'jwt' is HS256 tokens signed with `jwt.secret`, 'oauth' the
 * access tokens of our own authorization server, 'none' nothing (a presented token is refused). Decided once from the mode, the
 * tri-state `enabled` flags of `mcp.auth.jwt` and `mcp.auth.oauth`, `jwt.secret` and whether the OAuth server runs, so no reader
 * combines flags again (and the resolved config keeps none of those flags).
 */
export type AuthVerifiers = 'none' | 'jwt' | 'oauth' | 'jwt+oauth';

/**
 * Whether the OAuth authorization server runs: `oauth.enabled: true` demands it (a missing piece is a config error), `false` forbids
 * it, unset runs it when the mode uses OAuth and every piece is configured. It can run while its tokens are refused
 * (`mcp.auth.oauth.enabled: false`, or mode 'jwt' without `mcp.auth.oauth.enabled: true`).
 */
export type OAuthServerState = 'running' | 'off';

/** What every mode decides. */
interface AuthRules {
  verifiers: AuthVerifiers;
  oauthServer: OAuthServerState;
}

/**
 * The auth rules of a resolved config, computed once (the `auth` key of ResolvedConfig) and read
 * everywhere: transports, the OAuth server, the access policy and the CLI never recompute them.
 * A union by mode: with 'none' nobody has to sign in and the MCP access rules are off.
 */
export type ResolvedAuth =
  | (AuthRules & {
      mode: 'none';
      servesWithoutAuth: true;
      mcpAccessRulesActive: false;
      toolsListNeedsAuth: false;
    })
  | (AuthRules & {
      mode: 'oauth' | 'jwt' | 'both';
      /** No verifier can accept any token (`verifiers` is 'none'): the server is open in effect. */
      servesWithoutAuth: boolean;
      /**
       * MCP access rules (requireAuthForToolsList, requireAuthForToolsCall) in force: not lifted by `mcp.authEnforcement: { enabled: true,
       * requireAuth: false }`.
       */
      mcpAccessRulesActive: boolean;
      /** MCP access rule 1: tools/list needs an authenticated caller. */
      toolsListNeedsAuth: boolean;
    });

/**
 * The inputs resolveAuth reads: the sections as the schema parsed them, the `enabled` flags still tri-state (unset = the mode's default).
 */
export interface AuthInputs extends AuthFacts {
  mcp: {
    auth: {
      authType: AuthMode;
      jwt: { enabled?: boolean | undefined };
      oauth: { enabled?: boolean | undefined };
      requireAuthForToolsList: boolean;
    };
    authEnforcement: { enabled: boolean; requireAuth: boolean };
  };
}

/** Is this verifier one of the set? */
export function verifies(verifiers: AuthVerifiers, kind: 'jwt' | 'oauth'): boolean {
  return verifiers === kind || verifiers === 'jwt+oauth';
}

/**
 * Does this config run the OAuth authorization server? `oauth.enabled: true` demands it (a
 * missing piece is a config error); otherwise it runs when the mode uses OAuth and the identity
 * provider is configured.
 */
function oauthServerOf(config: AuthInputs): OAuthServerState {
  const explicit = config.oauth.enabled;
  const usesOAuth = config.mcp.auth.authType === 'oauth' || config.mcp.auth.authType === 'both';
  const runs = explicit ?? (usesOAuth && oauthConfigProblems(config).length === 0);
  return runs ? 'running' : 'off';
}

/**
 * The verifiers: HS256 when `mcp.auth.jwt.enabled` (default on unless the mode is 'oauth') and `jwt.secret` is set; ours when
 * the server runs and `mcp.auth.oauth.enabled` (default on unless the mode is 'jwt').
 */
function verifiersOf(config: AuthInputs, oauthServer: OAuthServerState): AuthVerifiers {
  const { authType, jwt, oauth } = config.mcp.auth;
  const hs256 = (jwt.enabled ?? authType !== 'oauth') && config.jwt.secret !== undefined;
  const ours = oauthServer === 'running' && (oauth.enabled ?? authType !== 'jwt');
  if (hs256) return ours ? 'jwt+oauth' : 'jwt';
  return ours ? 'oauth' : 'none';
}

/** Derive every auth rule from the parsed sections, once. */
export function resolveAuth(config: AuthInputs): ResolvedAuth {
  const mode = config.mcp.auth.authType;
  const oauthServer = oauthServerOf(config);
  const verifiers = verifiersOf(config, oauthServer);
  if (mode === 'none')
    return { mode, verifiers, oauthServer, servesWithoutAuth: true, mcpAccessRulesActive: false, toolsListNeedsAuth: false };
  const enforcement = config.mcp.authEnforcement;
  const mcpAccessRulesActive = !(enforcement.enabled && !enforcement.requireAuth);
  return {
    mode,
    verifiers,
    oauthServer,
    servesWithoutAuth: verifiers === 'none',
    mcpAccessRulesActive,
    toolsListNeedsAuth: mcpAccessRulesActive && config.mcp.auth.requireAuthForToolsList,
  };
}
