import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer as netServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '@ai-backend/test-utils';
import { Redis } from 'ioredis';

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = netServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/**
 * A redis-server of the test's own (never the shared one), to kill and restart on the same port
 * for outage tests. Keeps nothing on disk unless `durable` (an append-only file synced on every
 * write, so a kill -9 loses nothing acknowledged and a restart on the same dir finds the data).
 */
export class PrivateRedis {
  child: ChildProcess | undefined;
  private constructor(
    readonly port: number,
    readonly dir: string,
    readonly bin: string,
    readonly durable: boolean,
  ) {}

  /** `bin`: the redis-server found by `testService('redis-server')` (suites skip without one). */
  static async create(bin = 'redis-server', opts: { durable?: boolean } = {}): Promise<PrivateRedis> {
    return new PrivateRedis(await freePort(), await mkdtemp(join(tmpdir(), 'ai-private-redis-')), bin, opts.durable ?? false);
  }

  async start(): Promise<void> {
    this.child = spawn(
      this.bin,
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        ...(this.durable ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']),
        '--dir',
        this.dir,
        '--daemonize',
        'no',
      ],
      { stdio: 'ignore' },
    );
    const probe = new Redis({ host: '127.0.0.1', port: this.port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    probe.on('error', () => undefined);
    try {
      await waitFor(
        async () => {
          if (
            (await probe
              .connect()
              .then(() => probe.ping())
              .catch(() => null)) === 'PONG'
          )
            return true;
          probe.disconnect();
          return false;
        },
        { timeoutMs: 5000, intervalMs: 50, what: `redis-server answering on port ${this.port}` },
      );
    } finally {
      probe.disconnect();
    }
  }

  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  async dispose(): Promise<void> {
    await this.kill();
    await rm(this.dir, { recursive: true, force: true });
  }
}
