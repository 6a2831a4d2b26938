import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Runtime } from '../../runtime/Runtime.js';
import { alice, backends, bob, makeRuntime, type OpenStore } from '../billing/__tests__/kit.js';
import { ledgerKeys } from '../billing/Ledger.js';
import type { LedgerEntry } from '../billing/types.js';
import { Retention } from './Retention.js';
import { createLogger } from '../../kernel/Logger.js';

const DAY = 86_400_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Calls as a metered call makes them: hold, then settle using part of it. */
async function calls(rt: Runtime, who: typeof alice, n: number, tag: string): Promise<void> {
  for (let i = 0; i < n; i++) {
    const r = await rt.billing.reserve({ identity: who, tokens: 100, requestId: `${tag}-${i}` });
    await rt.billing.settle(r, { tokensUsed: 40 + i, provider: 'openai', model: 'm' });
  }
}

const readJsonl = async (file: string) =>
  (await readFile(file, 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { log: string; seq: number; record: LedgerEntry });

describe.each(backends)('retention on $name', (backend) => {
  let store: OpenStore;
  let rt: Runtime;
  let dir: string;
  beforeAll(async () => backend.setup?.());
  beforeEach(async () => {
    store = await backend.open('retention');
    rt = await makeRuntime(store.storage, { billing: { platformFeeRate: 0.1 } });
    dir = await mkdtemp(join(tmpdir(), 'retention-'));
  });
  afterEach(async () => {
    await rt.close();
    await store.cleanup();
    await rm(dir, { recursive: true, force: true });
  });

  it('exports records older than the cutoff, then deletes them; balances unchanged, audit clean, newer records kept', async () => {
    for (const who of [alice, bob])
      await rt.billing.credit({
        userId: who.sub,
        tokens: 100_000,
        type: 'subscription',
        idempotencyKey: `seed-${who.sub}`,
        source: 'test',
      });
    await rt.billing.credit({ userId: alice.sub, tokens: 5_000, type: 'one_time', idempotencyKey: 'seed-one', source: 'test' });
    await calls(rt, alice, 7, 'old-a');
    await calls(rt, bob, 3, 'old-b');
    // Deliberate pauses: the records before and after the cutoff get distinct millisecond stamps.
    await sleep(5);
    const cutoff = Date.now();
    await sleep(5);
    await calls(rt, alice, 2, 'new-a');
    const before = { alice: await rt.billing.ledger.account(alice.sub), bob: await rt.billing.ledger.account(bob.sub) };
    const oldAlice = (await store.storage.readLog<LedgerEntry>(ledgerKeys.log(alice.sub))).filter((e) => Date.parse(e.record.at) < cutoff);
    expect(oldAlice).toHaveLength(2 + 14); // two credits, 7 reserves and 7 settles

    // batchSize 4: several batches per log, the last one partly old.
    const retention = new Retention(
      store.storage,
      { days: { ledger: 30, usage: 30, purchases: 30 }, exportDir: dir, format: 'jsonl', batchSize: 4 },
      createLogger('silent'),
    );
    const report = await retention.run(cutoff + 30 * DAY);
    expect(report.kinds.ledger).toMatchObject({ archived: 16 + 1 + 6 }); // alice 16, bob's credit and 3 calls
    expect(report.kinds.usage).toMatchObject({ archived: 7 + 3 });
    // purchases: per user the all-types log and one per type.
    expect(report.kinds.purchases).toMatchObject({ archived: 2 + 2 + 1 + 1 });

    // The export holds exactly the old records, in order, whole.
    const exported = await readJsonl(report.kinds.ledger!.file!);
    const aliceRows = exported.filter((r) => r.log === ledgerKeys.log(alice.sub));
    expect(aliceRows.map((r) => [r.seq, r.record])).toEqual(oldAlice.map((e) => [e.seq, e.record]));
    expect(exported.every((r) => Date.parse(r.record.at) < cutoff)).toBe(true);
    expect((await readdir(dir)).sort()).toHaveLength(3);

    // Gone from the store; the newer ones are still there with their numbers.
    const left = await store.storage.readLog<LedgerEntry>(ledgerKeys.log(alice.sub));
    expect(left.map((e) => e.record.requestId)).toEqual(['new-a-0', 'new-a-0', 'new-a-1', 'new-a-1']);
    expect(left[0]!.seq).toBe(17);
    expect(await store.storage.readLog(ledgerKeys.log(bob.sub))).toEqual([]);
    expect(await rt.billing.ledger.account(alice.sub)).toEqual(before.alice);
    expect(await rt.billing.ledger.account(bob.sub)).toEqual(before.bob);
    for (const who of [alice, bob]) expect(await rt.billing.ledger.audit(who.sub)).toMatchObject({ consistent: true });

    // A second run finds nothing more; calls after it still audit clean.
    const again = await retention.run(cutoff + 30 * DAY);
    expect(again.kinds.ledger).toMatchObject({ archived: 0 });
    await calls(rt, bob, 2, 'after');
    expect(await rt.billing.ledger.audit(bob.sub)).toMatchObject({
      consistent: true,
      balances: { subscription: (await rt.billing.balances(bob.sub)).subscription },
    });
  });

  it('a crash between the checkpoint and the delete is counted once (the audit skips what the checkpoint covers)', async () => {
    await rt.billing.credit({ userId: alice.sub, tokens: 10_000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
    await calls(rt, alice, 3, 'c');
    // The delete fails once: the run stops after the checkpoint was written.
    const trim = store.storage.trimLog.bind(store.storage);
    let fail = true;
    store.storage.trimLog = async (log, seq) => {
      if (fail) {
        fail = false;
        throw new Error('simulated crash before the delete');
      }
      return trim(log, seq);
    };
    const retention = new Retention(
      store.storage,
      { days: { ledger: 1 }, exportDir: dir, format: 'jsonl', batchSize: 100 },
      createLogger('silent'),
    );
    await expect(retention.run(Date.now() + 2 * DAY)).rejects.toThrow(/simulated crash/);
    expect(await rt.billing.ledger.audit(alice.sub)).toMatchObject({ consistent: true });
    const report = await retention.run(Date.now() + 2 * DAY);
    expect(report.kinds.ledger).toMatchObject({ archived: 7 });
    expect(await store.storage.readLog(ledgerKeys.log(alice.sub))).toEqual([]);
    expect(await rt.billing.ledger.audit(alice.sub)).toMatchObject({
      consistent: true,
      sums: { subscription: (await rt.billing.balances(alice.sub)).subscription },
    });
  });

  it('a ledger record it cannot sum stops only its own log: later logs are archived, the run completes', async () => {
    // alice's log sorts before bob's: its bad record comes first in the run.
    await rt.billing.credit({ userId: alice.sub, tokens: 10_000, type: 'subscription', idempotencyKey: 'seed-a', source: 'test' });
    const at = new Date().toISOString();
    await store.storage.append(ledgerKeys.log(alice.sub), { id: 'broken', at, kind: 'credit' });
    await rt.billing.credit({ userId: alice.sub, tokens: 5, type: 'subscription', idempotencyKey: 'after-a', source: 'test' });
    await rt.billing.credit({ userId: bob.sub, tokens: 10_000, type: 'subscription', idempotencyKey: 'seed-b', source: 'test' });
    await calls(rt, bob, 2, 'b');
    const logs: string[] = [];
    const retention = new Retention(
      store.storage,
      { days: { ledger: 1 }, exportDir: dir, format: 'jsonl', batchSize: 100 },
      createLogger('warn', (l) => logs.push(l)),
    );
    const report = await retention.run(Date.now() + 2 * DAY);
    // alice's credit before the bad record, and bob's whole log.
    expect(report.kinds.ledger).toMatchObject({ archived: 1 + 1 + 4, stuck: 1 });
    expect((await store.storage.readLog<LedgerEntry>(ledgerKeys.log(alice.sub))).map((e) => e.record.id)).toHaveLength(2);
    expect(await store.storage.readLog(ledgerKeys.log(bob.sub))).toEqual([]);
    expect(logs.filter((l) => l.includes('retention: a ledger record cannot be archived'))).toHaveLength(1);
    expect(await rt.billing.ledger.audit(bob.sub)).toMatchObject({ consistent: true });
  });

  it('metered calls running during archiving all succeed, and the audit is clean after', async () => {
    await rt.billing.credit({ userId: alice.sub, tokens: 10_000_000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
    await calls(rt, alice, 60, 'old');
    await sleep(5); // deliberate: the old records' stamps fall before the cutoff
    const cutoff = Date.now();
    const retention = new Retention(
      store.storage,
      { days: { ledger: 1, usage: 1 }, exportDir: dir, format: 'csv', batchSize: 10 },
      createLogger('silent'),
    );
    const [report, during] = await Promise.all([
      retention.run(cutoff + DAY),
      Promise.allSettled(Array.from({ length: 40 }, (_, i) => calls(rt, alice, 1, `during-${i}`))),
    ]);
    expect(during.filter((r) => r.status === 'rejected')).toEqual([]);
    expect(report.kinds.ledger!.archived).toBeGreaterThanOrEqual(121);
    expect(await rt.billing.ledger.audit(alice.sub)).toMatchObject({ consistent: true });
    // CSV: a header and one line per archived record.
    const csv = (await readFile(report.kinds.ledger!.file!, 'utf8')).trim().split('\n');
    expect(csv[0]).toBe('log,seq,at,record');
    expect(csv).toHaveLength(report.kinds.ledger!.archived + 1);
    expect(csv[1]).toMatch(/^"ledger:user-alice",1,"\d{4}-/);
  });
});

// Mounting a filesystem needs root; elsewhere the case is skipped.
describe.skipIf(process.getuid?.() !== 0)('retention when the export filesystem fills up', () => {
  it('refuses the run and deletes nothing when a batch does not fit (a short write is not taken for the batch)', async () => {
    const { execFileSync } = await import('node:child_process');
    const { open, truncate, stat } = await import('node:fs/promises');
    const mount = await mkdtemp(join(tmpdir(), 'retention-full-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mount]);
    const store = await backends[0]!.open('retention-full');
    const rt = await makeRuntime(store.storage, { billing: { platformFeeRate: 0.1 } });
    try {
      await rt.billing.credit({ userId: alice.sub, tokens: 1_000_000, type: 'subscription', idempotencyKey: 'seed', source: 'test' });
      await calls(rt, alice, 60, 'old');
      const log = ledgerKeys.log(alice.sub);
      const before = await store.storage.readLog<LedgerEntry>(log);
      const balance = await rt.billing.balances(alice.sub);
      // Fill the filesystem, then free less room than the batch needs (121 records: ~40 KB).
      const filler = join(mount, 'filler');
      const f = await open(filler, 'w');
      try {
        for (;;) await f.write(Buffer.alloc(4096, 1));
      } catch {
        // ENOSPC: full
      } finally {
        await f.close();
      }
      await truncate(filler, (await stat(filler)).size - 12_000);
      const exportDir = join(mount, 'archive');
      const retention = new Retention(
        store.storage,
        { days: { ledger: 1 }, exportDir, format: 'jsonl', batchSize: 500 },
        createLogger('silent'),
      );
      await expect(retention.run(Date.now() + 2 * DAY)).rejects.toMatchObject({ code: 'ENOSPC' });
      // Nothing left the store, and the export holds whole lines only (none of this batch).
      expect(await store.storage.readLog<LedgerEntry>(log)).toEqual(before);
      expect(await rt.billing.balances(alice.sub)).toEqual(balance);
      expect(await rt.billing.ledger.audit(alice.sub)).toMatchObject({ consistent: true });
      const files = await readdir(exportDir);
      for (const file of files) expect(await readFile(join(exportDir, file), 'utf8')).toBe('');
    } finally {
      await rt.close();
      await store.cleanup();
      execFileSync('umount', [mount]);
      await rm(mount, { recursive: true, force: true });
    }
  });
});
