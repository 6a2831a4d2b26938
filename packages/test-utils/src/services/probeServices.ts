import { accessSync, constants, existsSync, readdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

/**
 * The outside services some suites need. Probed once per run by the vitest globalSetup
 * (`servicesGlobalSetup.ts`), which hands the result to every test file through `inject`.
 */
export type ServiceName = 'redis' | 'redis-server' | 'postgres' | 'postgres-server' | 'chromium';

export interface ServiceStatus {
  name: ServiceName;
  ok: boolean;
  /** What was found or tried, e.g. "127.0.0.1:6379 answers PING" or "no answer on 127.0.0.1:6379". */
  detail: string;
  /** How to get the service when it is missing. */
  hint: string;
  host?: string;
  port?: number;
  /** An executable (redis-server, chromium). */
  path?: string;
  /** PostgreSQL connection string (trust auth, database `test`). */
  url?: string;
  /** True when the run started this service itself (a private redis-server). */
  started?: boolean;
}

export type ServiceMap = Record<ServiceName, ServiceStatus>;

/** Environment overrides (point a probe elsewhere, e.g. at a closed port to see the skip path). */
export const SERVICE_ENV = {
  redis: 'AI_BACKEND_TEST_REDIS', // host:port, default 127.0.0.1:6379
  redisServer: 'AI_BACKEND_TEST_REDIS_SERVER', // command name or path, default redis-server
  postgres: 'AI_BACKEND_TEST_POSTGRES_URL', // default postgres://postgres@127.0.0.1:5432/test
  postgresServer: 'AI_BACKEND_TEST_POSTGRES_BIN', // a directory holding initdb and postgres, default the newest /usr/lib/postgresql/*/bin
  chromium: 'AI_BACKEND_TEST_CHROMIUM', // default /usr/bin/chromium
  require: 'AI_BACKEND_REQUIRE_SERVICES', // 1: a missing service fails the run instead of skipping
} as const;

export const servicesRequired = (env = process.env): boolean => env[SERVICE_ENV.require] === '1';

export function hostPort(value: string | undefined, fallback: { host: string; port: number }): { host: string; port: number } {
  if (!value) return fallback;
  const at = value.lastIndexOf(':');
  const port = Number(value.slice(at + 1));
  if (at <= 0 || !Number.isInteger(port)) throw new Error(`${value}: expected host:port`);
  return { host: value.slice(0, at), port };
}

/** Resolve a command on PATH (or an absolute path) to an executable file, or undefined. */
export function findExecutable(command: string, env = process.env): string | undefined {
  const candidates = command.includes('/')
    ? [command]
    : (env.PATH ?? '')
        .split(path.delimiter)
        .filter(Boolean)
        .map((dir) => path.join(dir, command));
  for (const file of candidates) {
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here; try the next PATH entry
    }
  }
  return undefined;
}

/**
 * Open a TCP connection, write `hello`, and resolve with the first bytes of the answer
 * (or undefined on refusal, reset or timeout). No client library, so a missing service never
 * prints a library's connection errors.
 */
function exchange(host: string, port: number, hello: Buffer, timeoutMs = 1000): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (value: Buffer | undefined) => {
      socket.destroy();
      resolve(value);
    };
    socket.setTimeout(timeoutMs, () => done(undefined));
    socket.once('error', () => done(undefined));
    socket.once('connect', () => socket.write(hello));
    socket.once('data', (data) => done(data));
  });
}

export async function redisAnswers(host: string, port: number): Promise<boolean> {
  const reply = await exchange(host, port, Buffer.from('PING\r\n'));
  return reply?.toString('latin1').startsWith('+PONG') ?? false;
}

/** A PostgreSQL server answers an SSLRequest with a single 'S' or 'N'. */
export async function postgresAnswers(host: string, port: number): Promise<boolean> {
  const sslRequest = Buffer.alloc(8);
  sslRequest.writeInt32BE(8, 0);
  sslRequest.writeInt32BE(80877103, 4);
  const reply = await exchange(host, port, sslRequest);
  return reply !== undefined && reply.length >= 1 && (reply[0] === 0x53 || reply[0] === 0x4e);
}

export async function probeRedis(env = process.env): Promise<ServiceStatus> {
  const { host, port } = hostPort(env[SERVICE_ENV.redis], { host: '127.0.0.1', port: 6379 });
  const hint =
    'start one (redis-server --daemonize yes --port 6379 --save "" --appendonly no), install redis-server (apt-get install redis-server) so the tests start their own, or run .ci/redis.sh';
  const ok = await redisAnswers(host, port);
  return { name: 'redis', ok, host, port, hint, detail: ok ? `${host}:${port} answers PING` : `nothing answers PING on ${host}:${port}` };
}

export function probeRedisServer(env = process.env): ServiceStatus {
  const command = env[SERVICE_ENV.redisServer] ?? 'redis-server';
  const found = findExecutable(command, env);
  return {
    name: 'redis-server',
    ok: found !== undefined,
    ...(found ? { path: found } : {}),
    detail: found ? found : `no ${command} on PATH`,
    hint: 'apt-get install redis-server (the binary is enough; nothing needs to run)',
  };
}

export async function probePostgres(env = process.env): Promise<ServiceStatus> {
  const url = env[SERVICE_ENV.postgres] ?? 'postgres://postgres@127.0.0.1:5432/test';
  const parsed = new URL(url);
  const host = parsed.hostname;
  const port = Number(parsed.port || 5432);
  const ok = await postgresAnswers(host, port);
  return {
    name: 'postgres',
    ok,
    host,
    port,
    url,
    detail: ok ? `${host}:${port} answers` : `nothing answers on ${host}:${port}`,
    hint: 'apt-get install postgresql, then pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start with trust auth on 127.0.0.1 and a database `test` (.ci/run does this)',
  };
}

/** The newest PostgreSQL server binaries on this machine (for a private cluster a test starts and stops). */
export function postgresBinDir(env = process.env): string | undefined {
  const chosen = env[SERVICE_ENV.postgresServer];
  if (chosen) return existsSync(path.join(chosen, 'initdb')) ? chosen : undefined;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(path.join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? path.join(root, versions[0], 'bin') : undefined;
}

export function probePostgresServer(env = process.env): ServiceStatus {
  const bin = postgresBinDir(env);
  return {
    name: 'postgres-server',
    ok: bin !== undefined,
    ...(bin ? { path: bin } : {}),
    detail: bin ?? `no initdb under ${env[SERVICE_ENV.postgresServer] ?? '/usr/lib/postgresql/*/bin'}`,
    hint: 'apt-get install postgresql (the binaries are enough; the tests start their own cluster)',
  };
}

export function probeChromium(env = process.env): ServiceStatus {
  const file = env[SERVICE_ENV.chromium] ?? '/usr/bin/chromium';
  const ok = existsSync(file) && findExecutable(file, env) !== undefined;
  return { name: 'chromium', ok, path: file, detail: ok ? file : `${file} is missing`, hint: 'apt-get install chromium' };
}

/** Probe every service (about a millisecond each when they answer; 1 s at most when one hangs). */
export async function probeServices(env = process.env): Promise<ServiceMap> {
  const [redis, postgres] = await Promise.all([probeRedis(env), probePostgres(env)]);
  return {
    redis,
    'redis-server': probeRedisServer(env),
    postgres,
    'postgres-server': probePostgresServer(env),
    chromium: probeChromium(env),
  };
}
