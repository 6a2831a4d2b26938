import { mintDevToken } from '@ai-backend/auth';
import { resolveConfig } from '@ai-backend/core';
import { loadConfig } from '../loadConfig.js';

/** `token`: mint a development JWT from the configured jwt.secret. */
export async function token(opts: { config?: string; sub: string; email?: string; scope: string[]; expiresIn: string }): Promise<number> {
  const config = resolveConfig((await loadConfig({ file: opts.config })).input);
  if (!config.jwt.secret) {
    process.stderr.write('jwt.secret is not configured (set JWT_SECRET or jwt.secret in the config)\n');
    return 1;
  }
  const jwt = await mintDevToken({
    secret: config.jwt.secret,
    sub: opts.sub,
    email: opts.email,
    scopes: opts.scope,
    expiresIn: opts.expiresIn,
    issuer: config.jwt.issuer,
    audience: config.jwt.audience,
  });
  process.stdout.write(jwt + '\n');
  return 0;
}
