import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../config/resolveConfig.js';
import { createLogger } from '../../kernel/Logger.js';
import { createRuntime } from '../../createRuntime.js';
import type { Runtime } from '../../runtime/Runtime.js';
import { handlePurchaseWebhook } from '../../services/billing/purchaseWebhook.js';
import type { Storage } from '../../kernel/Storage.js';
import { dropTestSchema, testPostgres, testPostgresOptions } from '@ai-backend/test-utils/services';
import { PostgresStorage, type PostgresStorageOptions } from './PostgresStorage.js';
import { SqliteStorage } from './SqliteStorage.js';
import type { SqliteDriverName } from './SqliteDriver.js';
import { SQLITE_DRIVERS } from './__tests__/sqliteDrivers.js';

/**
 * Billing against real crashes: a child process runs credits, purchase webhooks, metered calls
 * (reserve, then settle or release) and BYOK key stores concurrently, printing each one only
 * after it was acknowledged; we kill -9 it at a random moment, redeliver every webhook (those in
 * flight included), and check after every round that every acknowledged write is there, each
 * webhook was applied exactly once, balance = ledger for every user, and that once the hold
 * expiry has passed no hold is left open.
 */

const here = fileURLToPath(new URL('.', import.meta.url));
const SECRET = 'crash-test-webhook-secret-0123456789abcdef';
const VAULT_KEY = 'crash-test-vault-master-key-0123456789';
const USERS = 6;

const CHILD = `
import { SqliteStorage } from './SqliteStorage.ts';
import { PostgresStorage } from './PostgresStorage.ts';
import { resolveConfig } from '../../config/resolveConfig.ts';
import { createRuntime } from '../../createRuntime.ts';
import { createLogger } from '../../kernel/Logger.ts';
import { handlePurchaseWebhook } from '../../services/billing/purchaseWebhook.ts';
import { createHmac } from 'node:crypto';
const [kind, target, roundArg, driver] = process.argv.slice(2);
const round = Number(roundArg);
const out = (line) => process.stdout.write(line + '\\n');
const storage = kind === 'sqlite' ? await SqliteStorage.open({ file: target, driver }) : await PostgresStorage.connect(JSON.parse(target));
const config = resolveConfig({ storage: { type: 'memory' }, billing: { vaultKey: ${JSON.stringify(VAULT_KEY)}, webhookSecret: ${JSON.stringify(SECRET)}, platformFeeRate: 0.1 } });
const rt = await createRuntime(config, { storage, logger: createLogger('silent') });
out('READY ' + process.pid);
const user = (i) => 'u' + (i % ${USERS});
const sign = (body) => { const ts = String(Math.floor(Date.now() / 1000)); return { rawBody: body, timestampHeader: ts, signatureHeader: createHmac('sha256', ${JSON.stringify(SECRET)}).update(ts + '.' + body).digest('hex') }; };
const worker = async (w) => {
  for (let i = 0; ; i++) {
    const u = user(w + i);
    const id = round + '-' + w + '-' + i;
    try {
      switch (i % 4) {
        case 0: { const r = await rt.billing.credit({ userId: u, tokens: 500, type: i % 8 ? 'subscription' : 'one_time', idempotencyKey: 'c' + id, source: 'test' }); out('C ' + u + ' c' + id + ' ' + r.entryId); break; }
        case 1: {
          const body = JSON.stringify({ id: 'e' + id, type: 'purchase.completed', data: { userId: u, tokens: 300, tokenType: 'one_time' } });
          out('WS ' + u + ' e' + id);
          await handlePurchaseWebhook(rt, sign(body));
          out('W ' + u + ' e' + id);
          break;
        }
        case 2: {
          const identity = { sub: u, scopes: [], isAdmin: false, via: 'jwt' };
          const r = await rt.billing.reserve({ identity, tokens: 200, requestId: 'r' + id });
          await new Promise((res) => setTimeout(res, Math.random() * 20)); // a hold open for a while, on purpose: kills land inside it
          if (i % 3) { const s = await rt.billing.settle(r, { tokensUsed: 50 + (i % 100), provider: 'openai', model: 'm' }); out('M ' + u + ' r' + id + ' ' + s.tokensCharged); }
          else { await rt.billing.release(r, 'failed'); out('R ' + u + ' r' + id); }
          break;
        }
        case 3: await rt.vault.store(u, 'openai', 'sk-crash-' + id + '-abcdefghijklmnop'); out('K ' + u + ' ' + id); break;
      }
    } catch (err) {
      if (err?.appCode !== 'PAYMENT_REQUIRED') out('ERR ' + (err?.appCode ?? '') + ' ' + String(err?.message ?? err).replace(/\\n/g, ' '));
    }
  }
};
for (let w = 0; w < 12; w++) void worker(w);
`;

let workDir: string;
let childScript: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'billing-crash-'));
  // The child is bundled once (esbuild, what tsx would compile it with) and each of the 30 rounds
  // starts plain node on it: a round's start was ~1.5 s of CPU compiling and resolving the
  // sources under tsx, more than the round's own work. Packages stay imports, resolved from core's
  // node_modules (the bundle's folder), so the drivers load as the store loads them.
  const bundleDir = fileURLToPath(new URL('../../../node_modules/.cache/', import.meta.url));
  await mkdir(bundleDir, { recursive: true });
  childScript = join(bundleDir, `crash-child-${process.pid}-${Date.now()}.mjs`);
  await build({
    stdin: { contents: CHILD, resolveDir: here, sourcefile: 'crash-child.mjs', loader: 'js' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    conditions: ['ai-backend-source'],
    outfile: childScript,
    logLevel: 'error',
  });
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await rm(workDir, { recursive: true, force: true });
  await rm(childScript, { force: true });
});

interface Child {
  proc: ChildProcess;
  lines: string[];
  exited: Promise<void>;
  waitFor(count: number): Promise<void>;
}

function startChild(kind: string, target: string, round: number, driver = ''): Child {
  const proc = spawn(process.execPath, [childScript, kind, target, String(round), driver], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(proc);
  const lines: string[] = [];
  let partial = '';
  let stderr = '';
  let waiter: { count: number; resolve(): void } | undefined;
  proc.stdout!.on('data', (d: Buffer) => {
    const parts = (partial + d.toString()).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts);
    if (waiter && lines.length > waiter.count) waiter.resolve();
  });
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  return {
    proc,
    lines,
    exited,
    waitFor: (count) =>
      new Promise<void>((resolve, reject) => {
        if (lines.length > count) return resolve();
        waiter = { count, resolve };
        void exited.then(() => reject(new Error(`child exited early: ${stderr.slice(-2000)}`)));
      }),
  };
}

function signed(body: string) {
  const ts = String(Math.floor(Date.now() / 1000));
  return { rawBody: body, timestampHeader: ts, signatureHeader: createHmac('sha256', SECRET).update(`${ts}.${body}`).digest('hex') };
}

async function runtimeOn(storage: Storage): Promise<Runtime> {
  const config = resolveConfig({
    storage: { type: 'memory' },
    billing: { vaultKey: VAULT_KEY, webhookSecret: SECRET, platformFeeRate: 0.1 },
  });
  return createRuntime(config, { storage, logger: createLogger('silent') });
}

interface Backend {
  kind: 'sqlite' | 'postgres';
  /** The name in the test title: the kind, plus the driver for SQLite. */
  label: string;
  /** The SQLite driver the child opens the file with (ignored by PostgreSQL). */
  driver?: SqliteDriverName;
  target(): Promise<{ target: string; open(): Promise<Storage>; cleanup(): Promise<void> }>;
}

const pg = await testPostgres();
const backends: Backend[] = (
  [
    ...SQLITE_DRIVERS.map((driver) => ({
      kind: 'sqlite' as const,
      label: `sqlite (${driver})`,
      driver,
      target: async () => {
        const file = join(workDir, `crash-${driver.replace(/\W/g, '-')}.db`);
        return { target: file, open: () => SqliteStorage.open({ file, driver }), cleanup: async () => undefined };
      },
    })),
    {
      kind: 'postgres',
      label: 'postgres',
      target: async () => {
        const opts: PostgresStorageOptions & { schema: string } = testPostgresOptions(pg, 'crash');
        return { target: JSON.stringify(opts), open: () => PostgresStorage.connect(opts), cleanup: () => dropTestSchema(pg, opts.schema) };
      },
    },
  ] satisfies Backend[]
).filter((b) => b.kind !== 'postgres' || pg.ok);

describe.each(backends)('billing on $label survives kill -9', (backend) => {
  it('10 rounds: acknowledged writes kept, webhooks applied once, balance = ledger, no hold left after expiry', async () => {
    const { target, open, cleanup } = await backend.target();
    const credits = new Map<string, { user: string; entryId: string }>();
    const webhooks = new Map<string, string>(); // event id -> user, every one started (acked or in flight)
    const finished = new Map<string, string>(); // requestId -> user (settled or released, acknowledged)
    const keys = new Map<string, string>(); // user -> last acknowledged key id
    let errors: string[] = [];
    try {
      for (let round = 1; round <= 10; round++) {
        const child = startChild(backend.kind, target, round, backend.driver);
        await child.waitFor(0);
        // A random moment: between 30 and 400 acknowledged operations into the round.
        await child.waitFor(30 + Math.floor(Math.random() * 370));
        child.proc.kill('SIGKILL');
        await child.exited;
        expect(child.proc.signalCode).toBe('SIGKILL');
        for (const line of child.lines.slice(1)) {
          const [op, a, b, c] = line.split(' ');
          if (op === 'C') credits.set(b!, { user: a!, entryId: c! });
          if (op === 'WS') webhooks.set(b!, a!);
          if (op === 'M' || op === 'R') finished.set(b!, a!);
          if (op === 'K') keys.set(a!, b!);
          if (op === 'ERR') errors.push(line);
        }

        const storage = await open();
        const rt = await runtimeOn(storage);
        try {
          // The sender redelivers every webhook it has not seen acknowledged (and some it has).
          for (const [id, user] of webhooks) {
            const body = JSON.stringify({ id, type: 'purchase.completed', data: { userId: user, tokens: 300, tokenType: 'one_time' } });
            expect((await handlePurchaseWebhook(rt, signed(body))).status).toBe(200);
          }
          // Once the hold expiry has passed, the sweep closes every hold the crash left open.
          await rt.billing.sweepExpiredReservations(Date.now() + 16 * 60_000);
          expect(await storage.keys('hold:')).toEqual([]);
          for (let u = 0; u < USERS; u++) {
            const user = `u${u}`;
            const entries = await rt.billing.ledger.entries(user);
            const audit = await rt.billing.ledger.audit(user);
            expect(audit, `round ${round} ${user}`).toMatchObject({ consistent: true });
            expect(audit.balances.subscription).toBeGreaterThanOrEqual(0);
            expect(audit.balances.one_time).toBeGreaterThanOrEqual(0);
            const ids = new Set(entries.map((e) => e.id));
            for (const [, c] of credits) if (c.user === user) expect(ids.has(c.entryId)).toBe(true);
            const perEvent = new Map<string, number>();
            for (const e of entries)
              if (e.source === 'webhook') perEvent.set(String(e.note?.eventId), (perEvent.get(String(e.note?.eventId)) ?? 0) + 1);
            for (const [id, owner] of webhooks) if (owner === user) expect(perEvent.get(id), `event ${id}`).toBe(1);
            // Every reserve is closed by exactly one settle or release.
            const closes = new Map<string, number>();
            for (const e of entries)
              if (e.kind === 'settle' || e.kind === 'release') closes.set(e.requestId!, (closes.get(e.requestId!) ?? 0) + 1);
            for (const e of entries) if (e.kind === 'reserve') expect(closes.get(e.requestId!), `hold ${e.requestId}`).toBe(1);
            for (const [req, owner] of finished) if (owner === user) expect(closes.get(req)).toBe(1);
            const a = await rt.billing.account(user);
            expect(a.purchased).toBe(entries.filter((e) => e.kind === 'credit').reduce((s, e) => s + e.lines[0]!.delta, 0));
            if (keys.has(user)) expect(await rt.vault.has(user, 'openai')).toBe(true);
          }
        } finally {
          await rt.close();
        }
      }
      expect(credits.size).toBeGreaterThan(50);
      expect(finished.size).toBeGreaterThan(50);
      expect(webhooks.size).toBeGreaterThan(50);
      // Only contention answers are acceptable failures inside the child (none expected).
      errors = errors.filter((l) => !l.startsWith('ERR CONFLICT'));
      expect(errors).toEqual([]);
    } finally {
      await cleanup();
    }
  }, 240_000);
});
