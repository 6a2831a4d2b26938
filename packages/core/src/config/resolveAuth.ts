import { oauthConfigProblems, type AuthFacts } from './authMode.js';

/** `mcp.auth.authType`: who may sign in, and how. */
export type AuthMode = 'oauth' | 'jwt' | 'both' | 'none';

/** What every mode decides. */
interface AuthRules {
  /**
   * HS256 tokens signed with `jwt.secret` are verified: `mcp.auth.jwt.enabled` (default on unless the mode is 'oauth') and `jwt.secret`
   * set.
   */
  jwtEnabled: boolean;
  /**
   * The OAuth authorization server runs: `oauth.enabled: true` demands it, `false` forbids it, unset runs it when the mode uses OAuth and
   * every piece is configured.
   */
  oauthServerEnabled: boolean;
  /** Our OAuth access tokens are accepted: the server runs and `mcp.auth.oauth.enabled` (default on unless the mode is 'jwt'). */
  oauthTokensAccepted: boolean;
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
      /** No verifier can accept any token (the mode's pieces are missing): the server is open in effect. */
      servesWithoutAuth: boolean;
      /**
       * MCP access rules (requireAuthForToolsList, requireAuthForToolsCall) in force: not lifted by `mcp.authEnforcement: { enabled: true,
       * requireAuth: false }`.
       */
      mcpAccessRulesActive: boolean;
      /** MCP access rule 1: tools/list needs an authenticated caller. */
      toolsListNeedsAuth: boolean;
    });

/** The inputs resolveAuth reads, already resolved by the schema (tri-state flags made booleans). */
export interface AuthInputs extends AuthFacts {
  mcp: {
    auth: { authType: AuthMode; jwt: { enabled: boolean }; oauth: { enabled: boolean }; requireAuthForToolsList: boolean };
    authEnforcement: { enabled: boolean; requireAuth: boolean };
  };
}

/**
 * Does this config run the OAuth authorization server? `oauth.enabled: true` demands it (a
 * missing piece is a config error); otherwise it runs when the mode uses OAuth and the identity
 * provider is configured.
 */
function runsOAuthServer(config: AuthInputs): boolean {
  if (config.oauth.enabled !== undefined) return config.oauth.enabled;
  const usesOAuth = config.mcp.auth.authType === 'oauth' || config.mcp.auth.authType === 'both';
  return usesOAuth && oauthConfigProblems(config).length === 0;
}

/** Derive every auth rule from the resolved sections, once. */
export function resolveAuth(config: AuthInputs): ResolvedAuth {
  const mode = config.mcp.auth.authType;
  const jwtEnabled = config.mcp.auth.jwt.enabled && config.jwt.secret !== undefined;
  const oauthServerEnabled = runsOAuthServer(config);
  const oauthTokensAccepted = oauthServerEnabled && config.mcp.auth.oauth.enabled;
  const rules = { jwtEnabled, oauthServerEnabled, oauthTokensAccepted };
  if (mode === 'none') return { mode, ...rules, servesWithoutAuth: true, mcpAccessRulesActive: false, toolsListNeedsAuth: false };
  const enforcement = config.mcp.authEnforcement;
  const mcpAccessRulesActive = !(enforcement.enabled && !enforcement.requireAuth);
  return {
    mode,
    ...rules,
    servesWithoutAuth: !jwtEnabled && !oauthTokensAccepted,
    mcpAccessRulesActive,
    toolsListNeedsAuth: mcpAccessRulesActive && config.mcp.auth.requireAuthForToolsList,
  };
}
