import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUpstream, gatewayConfig, rpcCall, tokenFor, waitFor, type TestUpstream } from './helpers/aiGateway.js';

/**
 * The embedded store under a file size limit (RLIMIT_FSIZE, as `ulimit -f` or a container's
 * limit sets it; a quota or SQLite's max_page_count fail the same way) on a filesystem with room.
 * Once the database's files reach it every billing write fails (503), but `/health/ready` said
 * `storage` ok: its test after a failure was a free-space check (plenty) and a one-page write,
 * which still fits in the WAL file. Health must say the store is down while writes fail and ok
 * again once they work, and the server must go on by itself when the limit is raised.
 */
const prlimit = (() => {
  try {
    execFileSync('prlimit', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
const LIMIT_KIB = 600;

describe.skipIf(!prlimit)('SQLite under a file size limit', () => {
  let dir: string;
  let upstream: TestUpstream;
  let child: ChildProcess;
  let url: string;
  let admin: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sqlite-size-limit-'));
    upstream = await createTestUpstream();
    const config = {
      ...gatewayConfig(upstream),
      monitoring: { logging: { level: 'silent' } },
      storage: { type: 'sqlite', dir, sqlite: { file: join(dir, 'ai-backend.db') } },
    };
    const script = fileURLToPath(new URL('../../bench/servers/ai-backend.mjs', import.meta.url));
    // A soft limit: the test raises it again below (a soft limit may go up to the hard one).
    child = spawn('prlimit', [`--fsize=${LIMIT_KIB * 1024}:unlimited`, process.execPath, script, JSON.stringify(config)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    url = await new Promise<string>((resolve, reject) => {
      child.stdout!.once('data', (d) => resolve(JSON.parse(String(d)).url));
      child.once('exit', (code) => reject(new Error(`server exited ${code}`)));
    });
    admin = await tokenFor('size-limit-admin', { admin: true });
  }, 60_000);
  afterAll(async () => {
    child?.kill('SIGKILL');
    await upstream?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const credit = (i: number) =>
    rpcCall(url, admin, 'billing.creditTokens', {
      userId: `size-limit-user-${i}`,
      tokens: 10,
      type: 'subscription',
      idempotencyKey: `size-limit-${i}-${'x'.repeat(150)}`,
    });
  const ready = async () => {
    const res = await fetch(`${url}/health/ready`);
    return { status: res.status, storage: ((await res.json()) as { checks: { storage: { ok: boolean } } }).checks.storage };
  };

  it('health says storage is down while writes fail at the limit, and ok once they work again', async () => {
    expect((await ready()).status).toBe(200);
    let i = 0;
    let refused: { code: number } | undefined;
    for (; i < 5000 && !refused; i++) refused = (await credit(i)).error;
    expect(refused?.code, 'the limit was reached').toBe(-32053);
    // Every write fails now, and health says so (it said ok: a one-page write still fit).
    expect((await credit(i++)).error?.code).toBe(-32053);
    expect(await ready()).toEqual({ status: 503, storage: { ok: false } });
    expect((await credit(i++)).error?.code).toBe(-32053);
    expect(await ready()).toEqual({ status: 503, storage: { ok: false } });

    execFileSync('prlimit', ['--pid', String(child.pid), '--fsize=unlimited:unlimited']);
    await waitFor(async () => (await ready()).status === 200, {
      timeoutMs: 5000,
      intervalMs: 50,
      what: 'health after the limit was raised',
    });
    expect((await credit(i++)).result).toBeTruthy();
  }, 120_000);
});
