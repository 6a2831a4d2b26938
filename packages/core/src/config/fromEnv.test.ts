import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ENV_VARIABLES } from './envVariables.js';
import { attributeToEnv, configFromEnv } from './fromEnv.js';
import { checkConfig, ConfigError } from './resolveConfig.js';

describe('the environment-variable table', () => {
  it('drives the reader: every variable sets the keys it lists', () => {
    const env = Object.fromEntries(
      ENV_VARIABLES.map((v) => [
        v.name,
        v.name === 'PORT'
          ? '9000'
          : v.name.endsWith('_URL')
            ? v.name === 'REDIS_URL'
              ? 'redis://:pw@r:6380/2'
              : 'postgres://u@db/x'
            : `value-of-${v.name}`,
      ]),
    );
    const config = configFromEnv(env) as Record<string, any>;
    const at = (path: string) => path.split('.').reduce((node, key) => node?.[key], config);
    for (const v of ENV_VARIABLES) for (const key of v.keys) expect(at(key), `${v.name} -> ${key}`).toBeDefined();
    expect(config.storage).toEqual({
      type: 'postgres',
      shared: 'redis',
      postgres: { connectionString: 'postgres://u@db/x' },
      redis: { host: 'r', port: 6380, password: 'pw', db: 2, tls: false },
    });
    expect(configFromEnv({ REDIS_URL: 'rediss://r' })?.storage).toEqual({ type: 'redis', redis: { host: 'r', port: 6379, tls: true } });
  });

  it('refuses malformed values under the variable name', () => {
    const refusal = (env: Record<string, string>) => {
      try {
        configFromEnv(env);
      } catch (e) {
        return e instanceof ConfigError ? e.problems : e;
      }
      return undefined;
    };
    expect(refusal({ PORT: '80a' })).toEqual([{ path: 'PORT', message: 'must be a port number (0-65535), got "80a"' }]);
    expect(refusal({ REDIS_URL: 'not a url' })).toEqual([
      { path: 'REDIS_URL', message: 'must be a URL such as redis://host:6379/0 (rediss:// for TLS)' },
    ]);
  });

  it('drives the error messages: a refused value is named by the variable that supplied it', () => {
    const env = { PORT: '70000', OAUTH_ENCRYPTION_KEY: 'short', DATABASE_URL: 'postgres://h/db' };
    const r = checkConfig({
      ...configFromEnv(env),
      storage: { ...configFromEnv(env)?.storage, postgres: { connectionString: 'x', poolSize: 0 } },
    });
    expect(r.ok).toBe(false);
    if (!r.ok)
      expect(
        attributeToEnv(r.problems, env)
          .map((p) => p.path)
          .sort(),
      ).toEqual(['DATABASE_URL', 'OAUTH_ENCRYPTION_KEY', 'PORT']);
    // The same key from the file keeps its key path.
    expect(attributeToEnv([{ path: 'jwt.secret', message: 'm' }], {})).toEqual([{ path: 'jwt.secret', message: 'm' }]);
  });

  it('is the table docs/configuration.md shows, row for row', () => {
    const page = readFileSync(new URL('../../../../docs/configuration.md', import.meta.url), 'utf8');
    const rows = page.split('\n').filter((l) => /^\| `[A-Z][A-Z0-9_]+` \|/.test(l));
    expect(rows).toEqual(ENV_VARIABLES.map((v) => `| \`${v.name}\` | ${v.description} |`));
  });
});

describe('expandMcpServerVariables', () => {
  it('expands ${VAR} and ${VAR:-default} in a pasted .mcp.json, and names an unset variable', async () => {
    const { expandMcpServerVariables } = await import('./fromEnv.js');
    const config = {
      mcpServers: {
        docs: { type: 'http', url: 'https://${HOST}/mcp', headers: { Authorization: 'Bearer ${TOKEN}' } },
        fs: { command: 'npx', args: ['-y', 'server', '${ROOT:-/srv}'], env: { LOG: '${LEVEL}' } },
      },
    } as never;
    const ok = expandMcpServerVariables(config, { HOST: 'mcp.example.com', TOKEN: 't0k', LEVEL: 'debug' });
    expect(ok.problems).toEqual([]);
    expect(ok.config).toMatchObject({
      mcpServers: {
        docs: { url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer t0k' } },
        fs: { args: ['-y', 'server', '/srv'], env: { LOG: 'debug' } },
      },
    });
    const missing = expandMcpServerVariables(config, { HOST: 'h' });
    expect(missing.problems.map((p) => p.path)).toEqual(['mcpServers.docs.headers.Authorization', 'mcpServers.fs.env.LOG']);
    expect(missing.problems[0]!.message).toMatch(/\$\{TOKEN\} is not set/);
  });
});
