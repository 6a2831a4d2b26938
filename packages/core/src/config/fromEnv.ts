import { ENV_VARIABLES } from './envVariables.js';
import { expandVars } from './sections/mcpServers.js';
import type { ConfigProblem } from './ConfigError.js';
import type { ConfigInput } from './schema.js';

type Env = Record<string, string | undefined>;

/**
 * The config the environment variables of ENV_VARIABLES give. They override the config file. The
 * provider keys are read here too (ANTHROPIC_API_KEY, ...), so nothing else reads process.env.
 */
export function configFromEnv(env: Env): ConfigInput {
  const out: Record<string, any> = {};
  const set = (path: string, value: unknown) => {
    const keys = path.split('.');
    let node = out;
    for (const key of keys.slice(0, -1)) node = node[key] ??= {};
    node[keys[keys.length - 1]!] = value;
  };
  for (const variable of ENV_VARIABLES) {
    const value = env[variable.name];
    if (value) variable.apply(value, set, env);
  }
  return out as ConfigInput;
}

/** Deep merge of plain objects; `over` wins. Arrays and routers are replaced, not merged. */
export function mergeConfig(base: ConfigInput, over: ConfigInput): ConfigInput {
  const isPlain = (v: unknown): v is Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype && !('_def' in v);
  const merge = (a: unknown, b: unknown): unknown => {
    if (!isPlain(a) || !isPlain(b)) return b === undefined ? a : b;
    const result: Record<string, unknown> = { ...a };
    for (const [k, v] of Object.entries(b)) result[k] = merge(a[k], v);
    return result;
  };
  return merge(base, over) as ConfigInput;
}

/**
 * Name the environment variable in problems about values it supplied (the environment overrides
 * the file): `OAUTH_ENCRYPTION_KEY: must be at least 32 characters`, not the key path. The keys
 * each variable sets come from the same table the reader uses.
 */
export function attributeToEnv(problems: ConfigProblem[], env: Env): ConfigProblem[] {
  const set = ENV_VARIABLES.filter((v) => env[v.name]);
  return problems.map((p) => {
    const from = set.find((v) => v.keys.some((key) => p.path === key || p.path.startsWith(key + '.')));
    return from ? { ...p, path: from.name } : p;
  });
}

/**
 * `${VAR}` and `${VAR:-default}` in the config file's `mcpServers` (command, args, env, cwd, url,
 * headers), as Claude Code expands a `.mcp.json`. Only the config file's servers: a server added
 * through `gateway.addServer` is taken literally, or an administrator's API call could copy the
 * server's environment into headers sent to a URL of their choosing. An unset variable without a
 * default is a problem naming it (a silently empty credential would fail later and obscurely).
 */
export function expandMcpServerVariables(config: ConfigInput, env: Env): { config: ConfigInput; problems: ConfigProblem[] } {
  const servers = (config as { mcpServers?: Record<string, Record<string, unknown>> }).mcpServers;
  if (!servers || typeof servers !== 'object') return { config, problems: [] };
  const problems: ConfigProblem[] = [];
  const out: Record<string, Record<string, unknown>> = {};
  for (const [name, server] of Object.entries(servers)) {
    if (!server || typeof server !== 'object') {
      out[name] = server;
      continue;
    }
    const copy: Record<string, unknown> = { ...server };
    const expand = (value: unknown, path: string): unknown =>
      typeof value === 'string'
        ? expandVars(value, env, (v) =>
            problems.push({ path: `mcpServers.${name}.${path}`, message: `\${${v}} is not set (write \${${v}:-default} for a default)` }),
          )
        : value;
    for (const key of ['command', 'cwd', 'url'] as const) if (key in copy) copy[key] = expand(copy[key], key);
    if (Array.isArray(copy.args)) copy.args = copy.args.map((a, i) => expand(a, `args.${i}`));
    for (const key of ['env', 'headers'] as const) {
      const rec = copy[key];
      if (rec && typeof rec === 'object')
        copy[key] = Object.fromEntries(Object.entries(rec).map(([k, v]) => [k, expand(v, `${key}.${k}`)]));
    }
    out[name] = copy;
  }
  return { config: { ...config, mcpServers: out } as ConfigInput, problems };
}
