import { cosmiconfig, type Loader } from 'cosmiconfig';
import { createJiti } from 'jiti';
import path from 'node:path';
import { configFromEnv, mergeConfig, type ConfigInput } from '@ai-backend/core';

const MODULE = 'ai-backend';

/**
 * TypeScript configs load through jiti: cosmiconfig's own .ts loader needs the TypeScript
 * compiler API, which TypeScript 7 no longer has (see docs/configuration.md).
 */
const loadTs: Loader = async (filepath) => {
  const jiti = createJiti(import.meta.url);
  return jiti.import(filepath, { default: true });
};

const explorer = () =>
  cosmiconfig(MODULE, {
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
  const result = opts.file ? await explorer().load(path.resolve(cwd, opts.file)) : await explorer().search(cwd);
  const fileConfig = (result?.config ?? {}) as ConfigInput;
  return { input: mergeConfig(fileConfig, configFromEnv(opts.env ?? process.env)), filepath: result?.filepath ?? null };
}
