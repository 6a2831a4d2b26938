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

/** What Node does with TypeScript itself: 'strip' or 'transform' from 22.18 and 23.6 on, else false. */
const nodeTypeScript = (process.features as { typescript?: string | false }).typescript;

/**
 * TypeScript configs (docs/configuration.md). Where Node strips types itself they load with
 * import(), as an ES module config does: nothing to install (jiti alone is 1.8 MiB of an
 * install that must stay small, docs/publishing.md). What Node's stripping does not take (an enum
 * or a namespace, an import without its file extension, a CommonJS `.cts` written with `export`)
 * and every TypeScript config on an older Node load through jiti, an optional package, as they
 * all did before; without it the error says to add it. (cosmiconfig's own .ts loader needs the
 * TypeScript compiler API, which TypeScript 7 no longer has.)
 */
const loadTs: Loader = async (filepath) => {
  let stripped: unknown;
  if (nodeTypeScript) {
    try {
      const mod = (await import(pathToFileURL(filepath).href)) as Record<string, unknown>;
      return mod.default ?? mod; // as jiti's `default: true`
    } catch (err) {
      stripped = err;
    }
  }
  const jiti = await import('jiti').catch(() => undefined);
  if (!jiti) {
    const why = stripped
      ? `Node ${process.version} could not load it by stripping its types (${(stripped as Error).message})`
      : `Node ${process.version} does not load TypeScript itself (22.18 and later do)`;
    throw new Error(`${filepath}: ${why}. Such a config loads through jiti: npm i jiti@2`);
  }
  return jiti.createJiti(import.meta.url).import(filepath, { default: true });
};

/**
 * ES module configs load with import(). cosmiconfig's own loader tries require() first, and on
 * Node 20 a syntax error then surfaces as "Cannot require() ES Module … bug in Node.js".
 */
const loadEsm: Loader = async (filepath) => {
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(filepath).href)) as Record<string, unknown>;
  } catch (err) {
    throw locateSyntaxError(filepath, err) ?? err;
  }
  // `export const config = {...}` alone would otherwise read as an empty file: the defaults, silently.
  const named = Object.keys(mod).filter((k) => k !== 'default');
  if (mod.default === undefined && named.length > 0) {
    throw new Error(
      `${filepath}: the config must be the default export (export default { ... }); the file exports only ${named.join(', ')}`,
    );
  }
  return mod.default;
};

/** `a function`, `an array`, `the number 42`: how a config value that is not an object is named. */
function describeValue(value: unknown): string {
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  if (value === null) return 'null';
  if (typeof value === 'object') return `an instance of ${(value as object).constructor?.name ?? 'a class'}`;
  return `the ${typeof value} ${JSON.stringify(value)}`;
}

/**
 * What a config file holds must be an object of settings (an empty file holds none). Anything else
 * was dropped by the merge with the environment below, and `config check` said "config ok" for a
 * file whose settings were never used.
 */
function settingsOf(filepath: string, value: unknown): ConfigInput {
  if (value === undefined) return {};
  const plain = typeof value === 'object' && value !== null && [Object.prototype, null].includes(Object.getPrototypeOf(value));
  if (!plain) throw new Error(`${filepath}: the config must be an object of settings ({ port: 8000, ... }), not ${describeValue(value)}`);
  return value as ConfigInput;
}

/** Where a config is looked for in a folder, first found first used. */
export const SEARCH_PLACES = [
  'package.json',
  `.${MODULE}rc`,
  `.${MODULE}rc.json`,
  `.${MODULE}rc.yaml`,
  `.${MODULE}rc.yml`,
  `.${MODULE}rc.js`,
  `.${MODULE}rc.mjs`,
  `.${MODULE}rc.cjs`,
  `${MODULE}.config.ts`,
  `${MODULE}.config.mts`,
  `${MODULE}.config.cts`,
  `${MODULE}.config.mjs`,
  `${MODULE}.config.js`,
  `${MODULE}.config.cjs`,
  `${MODULE}.config.json`,
  `${MODULE}.config.yaml`,
  // A name a user may well pick: unsearched, it was ignored and the defaults served instead.
  `${MODULE}.config.yml`,
];

/**
 * The config files in `dir` the search could use, in its order: the first is the one it uses
 * (`package.json` only with an `ai-backend` key). Read without loading them, so a file that does
 * not parse is listed too.
 */
export function configFilesIn(dir: string): string[] {
  return SEARCH_PLACES.map((place) => path.join(dir, place)).filter((file) => {
    if (!existsSync(file)) return false;
    if (path.basename(file) !== 'package.json') return true;
    try {
      return MODULE in (JSON.parse(readFileSync(file, 'utf8')) as object);
    } catch {
      return false; // a package.json that does not parse holds no config the search could use
    }
  });
}

/**
 * When the search found its config beside others it passes over, the line that says so: two
 * configs in one folder is a leftover or a rename half done, and the one edited may be the one
 * ignored. Undefined otherwise (and for `--config FILE`, which names its file).
 */
export function passedOverWarning(loaded: LoadedConfig, named: boolean): string | undefined {
  if (named || !loaded.filepath) return undefined;
  const others = configFilesIn(path.dirname(loaded.filepath)).filter((f) => f !== loaded.filepath);
  if (!others.length) return undefined;
  return `warning: ${others.join(', ')} ${others.length > 1 ? 'are' : 'is'} not used: ${loaded.filepath} comes first in the search (remove the one you do not mean)`;
}

// cosmiconfig loads only when a config is looked up, not when the library is imported.
const explorer = async () =>
  (await import('cosmiconfig')).cosmiconfig(MODULE, {
    searchStrategy: 'project',
    searchPlaces: SEARCH_PLACES,
    loaders: {
      '.ts': loadTs,
      '.mts': loadTs,
      '.cts': loadTs,
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

/** The environment every command reads: `<cwd>/.env` under the real environment, which wins. */
export function commandEnv(cwd: string = process.cwd()): Record<string, string | undefined> {
  return { ...readDotEnv(cwd), ...process.env };
}

/** Load `--config FILE` or search from `cwd`, then let `.env` and environment variables override. */
export async function loadConfig(
  opts: { file?: string; cwd?: string; env?: Record<string, string | undefined> } = {},
): Promise<LoadedConfig> {
  const cwd = opts.cwd ?? process.cwd();
  const found = await explorer();
  const result = opts.file ? await found.load(path.resolve(cwd, opts.file)) : await found.search(cwd);
  const fileConfig = result ? settingsOf(result.filepath, result.config) : {};
  const env = opts.env ?? commandEnv(cwd);
  // `${VAR}` in a pasted .mcp.json's servers is expanded from the same environment.
  const expanded = expandMcpServerVariables(fileConfig, env);
  if (expanded.problems.length > 0) throw new ConfigError(expanded.problems);
  return { input: mergeConfig(expanded.config, configFromEnv(env)), filepath: result?.filepath ?? null };
}

export { ConfigFileError };
