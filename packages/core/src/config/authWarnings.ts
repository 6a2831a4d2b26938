import { oauthConfigProblems } from './authMode.js';
import type { ResolvedConfig } from './schema.js';

/**
 * A configured auth mode that nobody can use: 'jwt' without jwt.secret verifies no token, 'oauth'
 * without a complete OAuth setup signs nobody in. The server still starts (public procedures and
 * /health work), so this is a start-up warning, not a config error. Reads the rules resolved once
 * in `config.auth`.
 */
export function unusableAuthWarning(config: Pick<ResolvedConfig, 'host' | 'storage' | 'jwt' | 'oauth' | 'auth'>): string | undefined {
  const { mode, jwtEnabled, oauthServerEnabled } = config.auth;
  if (mode === 'none') return undefined;
  const missingOAuth = () =>
    oauthConfigProblems(config)
      .map((p) => p.path)
      .join(', ');
  if (mode === 'jwt' && !jwtEnabled) {
    const why = config.jwt.secret ? 'mcp.auth.jwt.enabled is false' : 'jwt.secret is not set (JWT_SECRET, 32+ characters)';
    return `mcp.auth.authType is 'jwt' but ${why}: no token can be verified, so nobody can sign in and protected procedures refuse every caller`;
  }
  if (mode === 'oauth' && !oauthServerEnabled) {
    return `mcp.auth.authType is 'oauth' but OAuth is not configured (missing: ${missingOAuth()}): nobody can sign in and protected procedures refuse every caller`;
  }
  if (mode === 'both' && !jwtEnabled && !oauthServerEnabled) {
    return `mcp.auth.authType is 'both' but neither jwt.secret nor OAuth is configured (missing: jwt.secret, ${missingOAuth()}): nobody can sign in and protected procedures refuse every caller`;
  }
  return undefined;
}
