import { oauthConfigProblems, oauthServerEnabled } from './authMode.js';
import type { ResolvedConfig } from './schema.js';

/**
 * A configured auth mode that nobody can use: 'jwt' without jwt.secret verifies no token, 'oauth'
 * without a complete OAuth setup signs nobody in. The server still starts (public procedures and
 * /health work), so this is a start-up warning, not a config error.
 */
export function unusableAuthWarning(config: Pick<ResolvedConfig, 'host' | 'storage' | 'jwt' | 'mcp' | 'oauth'>): string | undefined {
  const authType = config.mcp.auth.authType;
  if (authType === 'none') return undefined;
  const jwtReady = Boolean(config.jwt.secret);
  const oauthReady = oauthServerEnabled(config);
  const missingOAuth = () => oauthConfigProblems(config).map((p) => p.path).join(', ');
  if (authType === 'jwt' && !jwtReady) {
    return "mcp.auth.authType is 'jwt' but jwt.secret is not set (JWT_SECRET, 32+ characters): no token can be verified, so nobody can sign in and protected procedures refuse every caller";
  }
  if (authType === 'oauth' && !oauthReady) {
    return `mcp.auth.authType is 'oauth' but OAuth is not configured (missing: ${missingOAuth()}): nobody can sign in and protected procedures refuse every caller`;
  }
  if (authType === 'both' && !jwtReady && !oauthReady) {
    return `mcp.auth.authType is 'both' but neither jwt.secret nor OAuth is configured (missing: jwt.secret, ${missingOAuth()}): nobody can sign in and protected procedures refuse every caller`;
  }
  return undefined;
}
