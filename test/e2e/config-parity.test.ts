/**
 * `ai-backend config check` refuses exactly what `ai-backend serve` refuses, with the same lines
 * (key path, or the environment variable that supplied the value): both run the spawned, built
 * CLI on the same config file and environment.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../../packages/cli/bin/ai-backend.js', import.meta.url));
const SECRET = 'parity-test-secret-0123456789abcdef';
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ai-backend-parity-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Outcome {
  ok: boolean;
  /** Problem lines, sorted. */
  problems: string[];
}

/** Run the CLI; `serve` counts as accepted once it prints its banner (then it is stopped). */
function cli(args: string[], env: Record<string, string>): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: dir, env: { PATH: process.env.PATH!, LOG_LEVEL: 'warn', ...env } });
    let stdout = '';
    let stderr = '';
    let done = false;
    const finish = (ok: boolean) => {
      if (done) return;
      done = true;
      const problems = stderr
        .split('\n')
        .filter((l) => /^[\w.()[\]]+: /.test(l))
        .sort();
      resolve({ ok, problems });
    };
    child.stdout.on('data', (d) => {
      stdout += d;
      if (/config ok|listening on/.test(stdout)) {
        if (args[0] === 'serve') child.kill('SIGKILL');
        finish(true);
      }
    });
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => finish(code === 0 && /config ok|listening on/.test(stdout)));
  });
}

async function both(name: string, config: Record<string, unknown>, env: Record<string, string> = {}) {
  const file = `${name}.json`;
  await writeFile(path.join(dir, file), JSON.stringify({ port: 0, storage: { type: 'memory' }, ...config }));
  const [check, serve] = await Promise.all([cli(['config', 'check', '--config', file], env), cli(['serve', '--config', file], env)]);
  return { check, serve };
}

describe('config check and serve agree', () => {
  const refused: Array<[string, Record<string, unknown>, Record<string, string>, RegExp]> = [
    ['oauth enabled without its pieces', { oauth: { enabled: true } }, {}, /^oauth\.encryptionKey: required/],
    ['an unauthenticated public bind', { host: '0.0.0.0' }, {}, /^host: refusing to serve without authentication/],
    ['jwt auth without a secret on a public bind', { host: '0.0.0.0', mcp: { auth: { authType: 'jwt' } } }, {}, /^host: refusing/],
    [
      'a short OAUTH_ENCRYPTION_KEY from the environment',
      {},
      { OAUTH_ENCRYPTION_KEY: 'short' },
      /^OAUTH_ENCRYPTION_KEY: must be at least 32 characters$/,
    ],
    ['a short JWT_SECRET from the environment', {}, { JWT_SECRET: 'short' }, /^JWT_SECRET: must be at least 32 bytes$/],
    ['an unparsable REDIS_URL', {}, { REDIS_URL: 'not a url' }, /^REDIS_URL: must be a URL/],
    [
      'sessionStorePath together with another oauth.sessionStorage',
      { mcp: { auth: { oauth: { sessionStorePath: 'sessions' } } }, oauth: { sessionStorage: { type: 'memory' } } },
      {},
      /^mcp\.auth\.oauth\.sessionStorePath: conflicts/,
    ],
    [
      'a headers timeout longer than the request timeout',
      { limits: { headersTimeoutMs: 70_000 } },
      {},
      /^limits\.headersTimeoutMs: must not exceed/,
    ],
    ['an unknown mcp.sessions key', { mcp: { sessions: { idleMs: 5 } } }, {}, /^mcp\.sessions: unknown key/],
  ];

  it.each(refused)(
    'both refuse %s, with the same lines',
    async (name, config, env, line) => {
      const { check, serve } = await both(name.replace(/\W+/g, '-'), config, env);
      expect(check.ok).toBe(false);
      expect(serve.ok).toBe(false);
      expect(check.problems).toEqual(serve.problems);
      expect(
        check.problems.some((l) => line.test(l)),
        check.problems.join('\n'),
      ).toBe(true);
    },
    30_000,
  );

  const accepted: Array<[string, Record<string, unknown>, Record<string, string>]> = [
    ['the defaults', {}, {}],
    ['a public bind with a JWT secret', { host: '0.0.0.0', mcp: { auth: { authType: 'jwt' } } }, { JWT_SECRET: SECRET }],
    ['a public bind without auth, risk accepted', { host: '0.0.0.0', allowUnauthenticatedRemote: true }, {}],
    ['sessionStorePath alone (mapped to a file session store)', { mcp: { auth: { oauth: { sessionStorePath: 'oauth-sessions' } } } }, {}],
    [
      'the MCP session options and edge limits',
      {
        mcp: {
          sessions: {
            idleTimeoutMs: 60_000,
            maxSessions: 10,
            parkIdleMs: 5000,
            maxLiveSessions: 2,
            eventStore: 'none',
            retryIntervalMs: 500,
          },
        },
        limits: { maxSseStreamsPerClient: 4, bodyIdleTimeoutMs: 2000 },
      },
      {},
    ],
  ];

  it.each(accepted)(
    'both accept %s',
    async (name, config, env) => {
      const { check, serve } = await both(name.replace(/\W+/g, '-'), config, env);
      expect(check).toEqual({ ok: true, problems: [] });
      expect(serve.ok).toBe(true);
    },
    30_000,
  );
});
