import { isLoopbackHost, oauthConfigProblems } from './authMode.js';
import { verifies } from './resolveAuth.js';
import type { ResolvedConfig } from './schema.js';

type WarningFacts = Pick<ResolvedConfig, 'host' | 'storage' | 'jwt' | 'oauth' | 'auth'>;

/** Why no HS256 token is verified (the config accepts none). */
const jwtWhy = (config: WarningFacts) =>
  config.jwt.secret ? 'mcp.auth.jwt.enabled is false' : 'jwt.secret is not set (JWT_SECRET, 32+ characters)';

/** Why none of our OAuth access tokens is verified (the config accepts none). */
function oauthWhy(config: WarningFacts): string {
  if (config.auth.oauthServer === 'running') return 'mcp.auth.oauth.enabled is false';
  const missing = oauthConfigProblems(config).map((p) => p.path);
  return missing.length ? `OAuth is not configured (missing: ${missing.join(', ')})` : 'oauth.enabled is false';
}

/**
 * A configured auth mode that nobody can use: 'jwt' without jwt.secret verifies no token, 'oauth'
 * without a complete OAuth setup signs nobody in. The server still starts (public procedures and
 * /health work), so this is a start-up warning, not a config error. Reads the rules resolved once
 * in `config.auth`: it warns exactly when the mode asks for sign-in and `auth.verifiers` is 'none'.
 */
export function unusableAuthWarning(config: WarningFacts): string | undefined {
  const { mode, verifiers } = config.auth;
  if (mode === 'none' || verifiers !== 'none') return undefined;
  const outcome = 'nobody can sign in and protected procedures refuse every caller';
  if (mode === 'jwt') return `mcp.auth.authType is 'jwt' but ${jwtWhy(config)}: no token can be verified, so ${outcome}`;
  if (mode === 'oauth') return `mcp.auth.authType is 'oauth' but ${oauthWhy(config)}: ${outcome}`;
  if (!config.jwt.secret && config.auth.oauthServer === 'off' && oauthConfigProblems(config).length) {
    const missing = ['jwt.secret', ...oauthConfigProblems(config).map((p) => p.path)].join(', ');
    return `mcp.auth.authType is 'both' but neither jwt.secret nor OAuth is configured (missing: ${missing}): ${outcome}`;
  }
  return `mcp.auth.authType is 'both' but ${jwtWhy(config)} and ${oauthWhy(config)}: ${outcome}`;
}

/**
 * HS256 tokens verified without `jwt.audience` on a server other machines reach: a token minted
 * for any other service sharing the secret is accepted here, against MCP's rule that a server
 * accepts only tokens issued for it (RFC 8707; docs/auth-jwt.md). Not an error (the secret is
 * this server's to share), so a start-up warning; silent on a loopback host, where it is a
 * developer's own machine.
 */
export function jwtAudienceWarning(config: WarningFacts): string | undefined {
  if (!verifies(config.auth.verifiers, 'jwt') || config.jwt.audience || isLoopbackHost(config.host)) return undefined;
  return "HS256 tokens are verified without jwt.audience: a token signed with jwt.secret for any audience is accepted; set jwt.audience to this server's MCP URL (https://<host>/mcp) and mint tokens for it";
}
