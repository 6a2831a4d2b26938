import { mintDevToken } from '@ai-backend/auth';
import { checkConfig } from '@ai-backend/core';
import { configProblemLines } from '../configProblemLines.js';
import { loadConfig } from '../loadConfig.js';

/**
 * What `--expires-in` accepts: a positive span in the words jose reads (`90s`, `30 min`, `1h`, `7 days`).
 * jose's own refusal says only "Invalid time period format", and it also takes `-1h` or `2h ago`,
 * which would mint a token already expired.
 */
const LIFETIME = /^\d+(?:\.\d+)? ?(?:s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|w|weeks?)$/i;

/** `token`: mint a development JWT from the configured jwt.secret. */
export async function token(opts: { config?: string; sub: string; email?: string; scope: string[]; expiresIn: string }): Promise<number> {
  if (!LIFETIME.test(opts.expiresIn.trim())) {
    process.stderr.write(
      `--expires-in: must be a lifetime such as 30m, 1h or 7d (a number, then s, m, h, d or w), got "${opts.expiresIn}"\n`,
    );
    return 1;
  }
  const loaded = await loadConfig({ file: opts.config });
  const checked = checkConfig(loaded.input);
  if (!checked.ok) {
    // The same lines as `config check`: the variable or the file's line and column of each problem.
    for (const line of configProblemLines(checked.problems, loaded.filepath))
      process.stderr.write(`${line}
`);
    return 1;
  }
  const config = checked.config;
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
