import type { z } from '../lib/zod.js';
import { ConfigSchema, type ConfigInput, type ResolvedConfig } from './schema.js';
import { ConfigError, type ConfigProblem } from './ConfigError.js';
import { PARSE_ONCE } from './parseOnce.js';

export { ConfigError, type ConfigProblem } from './ConfigError.js';

function toProblems(error: z.ZodError): ConfigProblem[] {
  return error.issues.map((issue) => {
    // Unknown keys are worded by PARSE_ONCE's error map, with a guess at the key meant (unknownKeysMessage.ts).
    const { message } = issue;
    const path = issue.path.map(String).join('.');
    return issue.code === 'unrecognized_keys' ? { path, message, unknownKeys: issue.keys } : { path, message };
  });
}

/** Configs this module produced; resolving one again returns it unchanged (defaults are resolved once). */
const resolved = new WeakSet<object>();

export function isResolvedConfig(value: unknown): value is ResolvedConfig {
  return typeof value === 'object' && value !== null && resolved.has(value);
}

/** Validate and resolve defaults once. Throws ConfigError listing every problem. */
export function resolveConfig(input: ConfigInput | ResolvedConfig | undefined): ResolvedConfig {
  if (isResolvedConfig(input)) return input;
  const result = ConfigSchema.safeParse(input ?? {}, PARSE_ONCE);
  if (!result.success) throw new ConfigError(toProblems(result.error));
  resolved.add(result.data);
  return result.data;
}

/** Like resolveConfig but returns problems instead of throwing (for `config check`). */
export function checkConfig(input: unknown): { ok: true; config: ResolvedConfig } | { ok: false; problems: ConfigProblem[] } {
  const result = ConfigSchema.safeParse(input ?? {}, PARSE_ONCE);
  if (!result.success) return { ok: false, problems: toProblems(result.error) };
  resolved.add(result.data);
  return { ok: true, config: result.data };
}
