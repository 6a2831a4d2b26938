import { verifies, sqliteFile, type ResolvedConfig } from '@ai-backend/core/internal';
import type { BoundAddress } from '@ai-backend/transports';

export interface BannerOptions {
  /** `serve --dev`: the console link carries this one-process sign-in code in its fragment. */
  devCode?: string;
}

/** The start-up banner: where everything is, and what is not configured yet. */
export function banner(addr: BoundAddress, config: ResolvedConfig, configPath: string | null, opts: BannerOptions = {}): string {
  const base = addr.url;
  const lines = [`ai-backend listening on ${base}${configPath ? ` (config: ${configPath})` : ' (no config file; defaults)'}`];
  if (config.protocols.tRpc) lines.push(`  tRPC      ${base}/trpc  (also ${base}/typedrpc)`);
  if (config.protocols.jsonRpc) lines.push(`  JSON-RPC  ${base}/rpc`);
  if (config.mcp.enabled && config.transports.http) lines.push(`  MCP       ${base}/mcp`);
  lines.push(`  health    ${base}/health`);
  // The fragment is never sent to a server; the console exchanges it for a token (loopback only).
  if (config.console.enabled && config.protocols.jsonRpc)
    lines.push(`  console   ${base}/console/${opts.devCode ? `#dev=${opts.devCode}  (signs you in as administrator)` : ''}`);
  lines.push(`  storage   ${config.storage.type}${config.storage.type === 'sqlite' ? ` (${sqliteFile(config.storage)})` : ''}`);
  const auth = config.auth.mode;
  lines.push(`  auth      ${auth}`);
  const { verifiers, oauthServer } = config.auth;
  if ((auth === 'oauth' || auth === 'both') && oauthServer === 'off') {
    lines.push(
      '',
      '  OAuth is the MCP auth type but is not configured: tools that need sign-in answer 401.',
      '  Reachable without sign-in: tools/list, public tools, /trpc and /rpc public procedures, /health.',
      '  Configure oauth.providerClientId, oauth.providerClientSecret, oauth.provider ({ issuer }) and',
      '  OAUTH_ENCRYPTION_KEY (32+ characters), or use JWT (JWT_SECRET, mcp.auth.authType: "jwt").',
      '  See docs/oauth.md.',
    );
  }
  if ((auth === 'jwt' && !verifies(verifiers, 'jwt')) || (auth === 'both' && verifiers === 'none')) {
    // The cause decides the advice: a set secret whose JWTs are switched off needs no new secret.
    if (config.jwt.secret) {
      lines.push('', '  JWT is the auth type but mcp.auth.jwt.enabled is false: no token can be verified, nobody can sign in.');
      lines.push('  Remove mcp.auth.jwt.enabled: false from the config (or set it to true), then restart.');
    } else {
      lines.push('', '  JWT is the auth type but jwt.secret is not set: no token can be verified, nobody can sign in.');
      lines.push('  Put JWT_SECRET=<32+ random characters> in .env (serve and token both read it), then restart.');
    }
  }
  if (auth === 'none') {
    lines.push('', '  Authentication is off (development only). Admin procedures still need an administrator token:');
    lines.push(
      config.jwt.secret
        ? '  npx ai-backend token --sub you --scope mcp:admin'
        : '  put JWT_SECRET=<32+ characters> in .env, restart, then: npx ai-backend token --sub you --scope mcp:admin',
    );
  }
  return lines.join('\n');
}
