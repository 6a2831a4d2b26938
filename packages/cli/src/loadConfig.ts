import type { Loader } from 'cosmiconfig';
import path from 'node:path';
import { configFromEnv, mergeConfig, type ConfigInput } from '@ai-backend/core';

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
    loaders: { '.ts': loadTs, '.mts': loadTs },
  });

export interface LoadedConfig {
  /** File + environment, not yet validated. */
  input: ConfigInput;
  /** Where the file config came from, if any. */
  filepath: string | null;
}

/** Load `--config FILE` or search from `cwd`, then let environment variables override. */
export async function loadConfig(opts: { file?: string; cwd?: string; env?: Record<string, string | undefined> } = {}): Promise<LoadedConfig> {
  const cwd = opts.cwd ?? process.cwd();
  const found = await explorer();
  const result = opts.file ? await found.load(path.resolve(cwd, opts.file)) : await found.search(cwd);
  const fileConfig = (result?.config ?? {}) as ConfigInput;
  return { input: mergeConfig(fileConfig, configFromEnv(opts.env ?? process.env)), filepath: result?.filepath ?? null };
}
