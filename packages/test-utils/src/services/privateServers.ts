import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findExecutable, postgresBinDir } from './probeServices.js';

export { postgresBinDir };

/**
 * Private Redis and PostgreSQL servers a test starts, stops and restarts itself (outage and
 * chaos tests), in a temp dir on a free port: never the machine's shared ones.
 */

export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  await new Promise((r) => srv.close(r));
  return port;
}

/** Spawn `cmd` and resolve once `ready` appears in its output; rejects when it exits first. */
function spawnUntil(cmd: string, args: string[], ready: string, opts: { uid?: number; gid?: number } = {}): Promise<ChildProcess> {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
  return new Promise<ChildProcess>((resolve, reject) => {
    let out = '';
    const onData = (d: Buffer) => {
      out += d.toString();
      if (out.includes(ready)) resolve(child);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', (err) => reject(new Error(`cannot start ${cmd}: ${err.message}`)));
    child.once('exit', (code) => reject(new Error(`${cmd} exited with ${code}: ${out.slice(-800)}`)));
  });
}

function exited(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((r) => child.once('exit', () => r()));
}

export interface PrivateServer {
  host: string;
  port: number;
  /** Stop it: SIGKILL for Redis (data up to the last fsynced write survives), an immediate shutdown (crash-like) for PostgreSQL. */
  stop(): Promise<void>;
  /** Start it again on the same port and data. */
  start(): Promise<void>;
  /** Stop and delete its data. */
  close(): Promise<void>;
}

/** A server that can hang: every process of it stopped (SIGSTOP) and continued (SIGCONT), a hung host as clients see it. */
export interface HangableServer {
  freeze(): Promise<void>;
  thaw(): Promise<void>;
}

/** A redis-server with `appendonly yes` and `appendfsync always`, so a restart keeps every acknowledged write. */
export async function startPrivateRedis(): Promise<PrivateServer & HangableServer> {
  const bin = findExecutable('redis-server');
  if (!bin) throw new Error('redis-server is not installed (run .ci/redis.sh)');
  const dir = await mkdtemp(join(tmpdir(), 'private-redis-'));
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    child = await spawnUntil(
      bin,
      ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'always'],
      'Ready to accept connections',
    );
  };
  const stop = async () => {
    child?.kill('SIGKILL');
    await exited(child);
  };
  await start();
  return {
    host: '127.0.0.1',
    port,
    start,
    stop,
    // One process: stopped, its socket stays open and nothing is answered.
    freeze: async () => void child?.kill('SIGSTOP'),
    thaw: async () => void child?.kill('SIGCONT'),
    close: async () => {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A PostgreSQL cluster of its own (initdb in a temp dir, trust auth, user `postgres`, database
 * `postgres`). PostgreSQL refuses to run as root, so under root it runs as the `postgres` user.
 */
export async function startPrivatePostgres(): Promise<PrivateServer & HangableServer & { user: string; database: string }> {
  const bin = postgresBinDir();
  if (!bin) throw new Error('PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin');
  const dir = await mkdtemp(join(tmpdir(), 'private-pg-'));
  const data = join(dir, 'data');
  const ids = process.getuid?.() === 0 ? await postgresUser() : {};
  if (ids.uid !== undefined) chownSync(dir, ids.uid, ids.gid!);
  await new Promise<void>((resolve, reject) => {
    const init = spawn(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...ids,
    });
    let out = '';
    init.stdout.on('data', (d: Buffer) => (out += d.toString()));
    init.stderr.on('data', (d: Buffer) => (out += d.toString()));
    init.once('error', reject);
    init.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`initdb failed (${code}): ${out.slice(-800)}`))));
  });
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    child = await spawnUntil(
      join(bin, 'postgres'),
      ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'max_connections=200'],
      'database system is ready to accept connections',
      ids,
    );
  };
  const stop = async () => {
    // SIGQUIT: immediate shutdown, no checkpoint; the next start recovers from the WAL, as after a crash.
    child?.kill('SIGQUIT');
    await exited(child);
  };
  // The postmaster and its backends: stopped, they keep every socket open and answer nothing.
  const signalAll = async (signal: NodeJS.Signals) => {
    const { execFileSync } = await import('node:child_process');
    const pid = child?.pid;
    if (pid === undefined) return;
    const kids = execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)])
      .toString()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
    for (const p of [pid, ...kids]) {
      try {
        process.kill(p, signal);
      } catch {
        // a backend that ended meanwhile
      }
    }
  };
  await start();
  return {
    host: '127.0.0.1',
    port,
    user: 'postgres',
    database: 'postgres',
    start,
    stop,
    freeze: () => signalAll('SIGSTOP'),
    thaw: () => signalAll('SIGCONT'),
    close: async () => {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function postgresUser(): Promise<{ uid?: number; gid?: number }> {
  const { execFileSync } = await import('node:child_process');
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    return { uid, gid };
  } catch {
    throw new Error('running as root: PostgreSQL needs a non-root user `postgres` to run a private cluster');
  }
}
