import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { mergeConfig, resolveConfig, ConfigError, type ConfigInput, type ResolvedConfig } from '@ai-backend/core';
import { createServer } from '@ai-backend/transports';
import { banner } from '../banner.js';
import { configProblemLines } from '../configProblemLines.js';
import { listenErrorMessage } from '../listenError.js';
import { loadConfig, passedOverWarning } from '../loadConfig.js';

export interface ServeOptions {
  config?: string;
  port?: string;
  host?: string;
  dev?: boolean;
}

/** What `--dev` means: local, no auth, SQLite store in ./.ai-backend-data, read-only workspace on the cwd. */
export function devOverrides(cwd: string): ConfigInput {
  return {
    host: '127.0.0.1',
    mcp: { auth: { authType: 'none' } },
    storage: { type: 'sqlite', dir: path.join(cwd, '.ai-backend-data') },
    serverWorkspaces: {
      default: {
        path: cwd,
        name: 'Current folder',
        readOnly: true,
        blockedPaths: ['**/.env', '**/.env.*', '**/.git/**', '**/.ai-backend-data/**'],
      },
    },
  };
}

export async function serve(opts: ServeOptions): Promise<void> {
  const loaded = await loadConfig({ file: opts.config });
  const passedOver = passedOverWarning(loaded, opts.config !== undefined);
  if (passedOver) process.stderr.write(`${passedOver}\n`);
  let input = loaded.input;
  if (opts.dev) input = mergeConfig(input, devOverrides(process.cwd()));
  const flags: Record<string, unknown> = {};
  if (opts.port !== undefined) {
    // As PORT is read (envVariables.ts): `--port ''` was Number('') = 0, a random port, and
    // `--port abc` failed as "expected number, received NaN".
    if (!/^\d+$/.test(opts.port.trim())) {
      process.stderr.write(`--port: must be a port number (0-65535; 0 picks a free one), got "${opts.port}"\n`);
      process.exitCode = 1;
      return;
    }
    flags.port = Number(opts.port);
  }
  if (opts.host !== undefined) flags.host = opts.host;
  input = mergeConfig(input, flags as ConfigInput);

  let config: ResolvedConfig;
  try {
    config = resolveConfig(input); // every rule `config check` applies, from the same schema
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    // The same lines as `config check`: the file, line and column of each problem where it has one.
    process.stderr.write(configProblemLines(err.problems, loaded.filepath).join('\n') + '\n');
    process.exitCode = 1;
    return;
  }
  // `--dev`: the console link signs the developer in as an administrator, from this machine only.
  // Its code lives only in this process; without a configured jwt.secret the minted token is signed
  // with a random secret of this process (nobody else can mint or verify such tokens).
  const devConsole =
    opts.dev && config.console.enabled && config.protocols.jsonRpc ? { code: randomBytes(32).toString('base64url') } : undefined;
  const serverConfig =
    devConsole && !config.jwt.secret
      ? resolveConfig(mergeConfig(input, { jwt: { secret: randomBytes(32).toString('base64url') } }))
      : config;
  const server = createServer(serverConfig, devConsole ? { consoleDevSignIn: devConsole } : {});
  let addr: Awaited<ReturnType<typeof server.start>>;
  try {
    addr = await server.start();
  } catch (err) {
    const message = listenErrorMessage(err);
    if (!message) throw err;
    // The store was opened before the listen: close it, so the exit leaves no lock behind.
    await server.stop().catch(() => undefined);
    process.stderr.write(`ai-backend: ${message}\n`);
    process.exitCode = 1;
    return;
  }
  process.stdout.write(banner(addr, config, loaded.filepath, devConsole ? { devCode: devConsole.code } : {}) + '\n');

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`\n${signal}: stopping (finishing in-flight requests)...\n`);
    server.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

export { ConfigError };
