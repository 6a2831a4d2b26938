import { writeFile, access } from 'node:fs/promises';
import path from 'node:path';
import { checkConfig, redactConfig } from '@ai-backend/core';
import { installCommand, missingPackages, neededPackages, unusableAuthWarning } from '@ai-backend/core/internal';
import { configProblemLines } from '../configProblemLines.js';
import { configFilesIn, loadConfig, passedOverWarning, SEARCH_PLACES } from '../loadConfig.js';
import { STARTER_CONFIG } from '../starterConfig.js';

/**
 * `config check`: print every problem with its path; exit code 1 when there is one. A valid config
 * that `serve` would warn about (nobody can sign in) gets the same warning here, on stderr, with
 * exit code 0: the server starts with it, but a user checking before the first run should know.
 */
export async function configCheck(opts: { config?: string }): Promise<number> {
  const loaded = await loadConfig({ file: opts.config });
  const passedOver = passedOverWarning(loaded, opts.config !== undefined);
  if (passedOver) process.stderr.write(`${passedOver}\n`);
  const result = checkConfig(loaded.input);
  // A driver or provider package the config needs and that is not installed fails `serve` at start: say so here too.
  const missing = result.ok ? missingPackages(result.config) : [];
  if (result.ok && missing.length) {
    for (const line of configProblemLines(missing, loaded.filepath)) process.stderr.write(`${line}\n`);
    return 1;
  }
  if (result.ok) {
    const warning = unusableAuthWarning(result.config);
    process.stdout.write(
      `config ok${warning ? ' (1 warning)' : ''}${loaded.filepath ? ` (${loaded.filepath})` : ' (defaults; no config file found)'}\n`,
    );
    if (warning) process.stderr.write(`warning: ${warning} (see docs/auth-jwt.md, docs/oauth.md)\n`);
    return 0;
  }
  for (const line of configProblemLines(result.problems, loaded.filepath)) process.stderr.write(`${line}\n`);
  return 1;
}

/** `config print`: the resolved config with secrets redacted. */
export async function configPrint(opts: { config?: string }): Promise<number> {
  const loaded = await loadConfig({ file: opts.config });
  const result = checkConfig(loaded.input);
  if (!result.ok) {
    for (const line of configProblemLines(result.problems, loaded.filepath)) process.stderr.write(`${line}\n`);
    return 1;
  }
  process.stdout.write(JSON.stringify(redactConfig(result.config), null, 2) + '\n');
  return 0;
}

/**
 * What to do after `init`. The starter config signs callers in with JWTs, which need a secret from
 * the environment first: without it the server starts but nobody can sign in.
 */
export const INIT_NEXT_STEPS = `next:
  1. the JWT secret (the starter config signs callers in with JWTs), in .env, which every
     ai-backend command reads (keep .env out of version control):
       echo "JWT_SECRET=$(openssl rand -hex 32)" >> .env
  2. npx ai-backend config check
  3. npx ai-backend serve
  4. a token to call it with: npx ai-backend token --sub me --scope mcp
`;

/** `init`: write a commented starter config; never overwrites. */
export async function init(opts: { file?: string }): Promise<number> {
  const file = path.resolve(opts.file ?? 'ai-backend.config.mjs');
  const exists = await access(file).then(
    () => true,
    () => false,
  );
  if (exists) {
    process.stderr.write(`${file} already exists; not overwriting\n`);
    return 1;
  }
  // A starter the search would find beside another config: whichever comes first in the search
  // wins, so the user's own config (a .json under a new .mjs) would silently stop being used.
  const other = SEARCH_PLACES.includes(path.basename(file)) ? configFilesIn(path.dirname(file))[0] : undefined;
  if (other) {
    process.stderr.write(
      `${other} is already the config here (ai-backend uses it); not writing ${path.basename(file)} beside it. Edit that one, or remove it first\n`,
    );
    return 1;
  }
  await writeFile(file, STARTER_CONFIG, { flag: 'wx' });
  const packages = await packagesLine(file);
  process.stdout.write(`wrote ${file}\n${packages ? `${packages}\n` : ''}${INIT_NEXT_STEPS}`);
  return 0;
}

/**
 * Which optional packages (drivers, provider packages) the config at `file` needs, from its
 * choices as resolved; a starter that does not resolve (it reads the environment) says nothing.
 */
async function packagesLine(file: string): Promise<string> {
  const loaded = await loadConfig({ file }).catch(() => undefined);
  const result = loaded ? checkConfig(loaded.input) : undefined;
  if (!result?.ok) return '';
  const needed = [...new Map(neededPackages(result.config).map((n) => [n.pkg.name, n])).values()];
  if (!needed.length) return 'its choices need no package beyond ai-backend';
  return `its choices need: ${needed.map((n) => `${n.pkg.name} (${n.path}: ${n.need})`).join(', ')}; install with ${needed.map((n) => installCommand(n.pkg)).join(' && ')}`;
}
