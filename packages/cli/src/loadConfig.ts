import type { Loader } from 'cosmiconfig';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
import type * as Dotenv from 'dotenv';
import { ConfigFileError, loadJson, loadYaml, locateSyntaxError } from './configFileError.js';
import { configFromEnv, mergeConfig, type ConfigInput } from '@ai-backend/core';
import { ConfigError, expandMcpServerVariables } from '@ai-backend/core/internal';

const MODULE = 'ai-backend';

/**
 * TypeScript configs load through jiti: cosmiconfig's own .ts loader needs the TypeScript
 * compiler API, which TypeScript 7 no longer has (see docs/configuration.md).
 */
const loadTs: Loader = async (filepath) => {
  const { createJiti } = await import('jiti');
  const jiti = createJiti(import.meta.url);
  return jiti.import(filepath, { default: true });
};

/**
 * ES module configs load with import(). cosmiconfig's own loader tries require() first, and on
 * Node 20 a syntax error then surfaces as "Cannot require() ES Module … bug in Node.js".
 */
const loadEsm: Loader = async (filepath) => {
  try {
    const mod = (await import(pathToFileURL(filepath).href)) as { default?: unknown };
    return mod.default;
  } catch (err) {
    throw locateSyntaxError(filepath, err) ?? err;
  }
};

// cosmiconfig loads only when a config is looked up, not when the library is imported.
const explorer = async () =>
  (await import('cosmiconfig')).cosmiconfig(MODULE, {
    searchStrategy: 'project',
    searchPlaces: [
      'package.json',
      `.${MODULE}rc`,
      `.${MODULE}rc.json`,
      `.${MODULE}rc.yaml`,
      `.${MODULE}rc.yml`,
      `.${MODULE}rc.js`,
      `.${MODULE}rc.mjs`,
      `${MODULE}.config.ts`,
      `${MODULE}.config.mts`,
      `${MODULE}.config.mjs`,
      `${MODULE}.config.js`,
      `${MODULE}.config.json`,
      `${MODULE}.config.yaml`,
    ],
    loaders: {
      '.ts': loadTs,
      '.mts': loadTs,
      '.mjs': loadEsm,
      '.js': loadEsm,
      '.json': loadJson,
      '.yaml': loadYaml,
      '.yml': loadYaml,
      noExt: loadYaml,
    },
  });

export interface LoadedConfig {
  /** File + environment, not yet validated. */
  input: ConfigInput;
  /** Where the file config came from, if any. */
  filepath: string | null;
}

/**
 * Variables from `<cwd>/.env`, if there is one. Every command reads it (serve, token, config), so a
 * secret written there once is seen by all of them; the real environment wins over the file.
 */
export function readDotEnv(cwd: string): Record<string, string> {
  const file = path.join(cwd, '.env');
  // dotenv (CommonJS) loads only when there is a file to parse: importing ai-backend as a
  // library, or serving from a folder without .env, loads no CommonJS module for it.
  return existsSync(file) ? (createRequire(import.meta.url)('dotenv') as typeof Dotenv).parse(readFileSync(file)) : {};
}

/** Load `--config FILE` or search from `cwd`, then let `.env` and environment variables override. */
export async function loadConfig(
  opts: { file?: string; cwd?: string; env?: Record<string, string | undefined> } = {},
): Promise<LoadedConfig> {
  const cwd = opts.cwd ?? process.cwd();
  const found = await explorer();
  const result = opts.file ? await found.load(path.resolve(cwd, opts.file)) : await found.search(cwd);
  const fileConfig = (result?.config ?? {}) as ConfigInput;
  const env = opts.env ?? { ...readDotEnv(cwd), ...process.env };
  // `${VAR}` in a pasted .mcp.json's servers is expanded from the same environment.
  const expanded = expandMcpServerVariables(fileConfig, env);
  if (expanded.problems.length > 0) throw new ConfigError(expanded.problems);
  return { input: mergeConfig(expanded.config, configFromEnv(env)), filepath: result?.filepath ?? null };
}

export { ConfigFileError };
