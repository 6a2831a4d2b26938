import { execFileSync } from 'node:child_process';
import { mkdtemp, open, rm, rmdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestUpstream,
  creditTokens,
  rpcCall,
  startAiServer,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';

/**
 * The embedded store on a filesystem that fills up: a tmpfs of 8 MiB this test mounts (root
 * only: mounting needs it; skipped otherwise), filled by another file until the disk has no
 * byte left. Calls that must write answer 503 within a second (never a wrong balance, never a
 * call served without its charge), `/health/ready` says the store is down, and once the filler is
 * gone the same server serves again with a ledger equal to its balance.
 */
const isRoot = process.getuid?.() === 0;

async function fillDisk(path: string): Promise<void> {
  const f = await open(path, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) await f.write(chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  }
  // The last bytes a 64 KiB chunk did not fit.
  try {
    for (;;) await f.write(Buffer.alloc(512, 1));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    await f.close();
  }
}

describe.skipIf(!isRoot)('SQLite on a full filesystem', () => {
  let mount: string;
  let upstream: TestUpstream;
  let gw: AiServer;
  let token: string;
  const sub = 'full-disk-user';

  beforeAll(async () => {
    mount = await mkdtemp(join(tmpdir(), 'full-disk-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', mount]);
    upstream = await createTestUpstream();
    gw = await startAiServer(upstream, { storage: { type: 'sqlite', sqlite: { file: join(mount, 'ai-backend.db') } } });
    token = await tokenFor(sub);
    await creditTokens(gw.url, await tokenFor('full-disk-admin', { admin: true }), sub, 50_000, 'full-disk-1');
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    await upstream?.close();
    if (mount) {
      execFileSync('umount', [mount]);
      await rmdir(mount);
    }
  });

  const generate = (content: string) =>
    rpcCall(gw.url, token, 'ai.generateText', { content, systemPrompt: 's', provider: 'openai', options: { maxTokens: 10 } });

  it('writes answer 503 within 1 s while the disk is full, health says the store is down, and service resumes when space returns', async () => {
    expect((await generate('before')).result).toBeTruthy();
    const balanceBefore = (await rpcCall<{ virtualTokenBalance: number }>(gw.url, token, 'billing.getTokenBalance')).result!
      .virtualTokenBalance;

    const filler = join(mount, 'filler');
    await fillDisk(filler);
    // Enough calls to outgrow whatever room the WAL file already had.
    const answers: Array<{ ok: boolean; code?: number; ms: number }> = [];
    for (let i = 0; i < 40; i++) {
      const started = performance.now();
      const r = await generate(`during ${i} ${'x'.repeat(2000)}`);
      answers.push({ ok: !r.error, code: r.error?.code, ms: performance.now() - started });
    }
    const refused = answers.filter((a) => !a.ok);
    expect(refused.length, 'some calls must have met the full disk').toBeGreaterThan(0);
    for (const a of refused) {
      expect(a.code).toBe(-32053);
      expect(a.ms).toBeLessThan(1000);
    }
    const ready = await fetch(`${gw.url}/health/ready`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { checks: Record<string, { ok: boolean }> }).checks.storage).toEqual({ ok: false });
    const served = answers.filter((a) => a.ok).length;

    await rm(filler);
    expect((await fetch(`${gw.url}/health/ready`)).status).toBe(200);
    expect((await generate('after')).result).toBeTruthy();
    const audit = await gw.runtime.billing.ledger.audit(sub);
    expect(audit.consistent).toBe(true);
    const balanceAfter = (await rpcCall<{ virtualTokenBalance: number }>(gw.url, token, 'billing.getTokenBalance')).result!
      .virtualTokenBalance;
    // Every call that was served (during and after) was charged: none was free.
    expect(balanceBefore - balanceAfter).toBeGreaterThan(0);
    // The upstream saw exactly the calls answered ok: nothing refused reached it.
    expect(upstream.requests.length).toBe(1 + served + 1);
  }, 90_000);
});
