// Which b-tree each SQLite WAL frame of a metered call's hold + settle belongs to (docs/performance.md,
// "SQLite pages per metered call"): BillingService's hold and the Hold's settle on a fresh SQLite
// store, `users` users credited once, `warm` calls, then automatic checkpoints off and `calls` more;
// each frame of the WAL they wrote is mapped to its table or index through SQLite's `dbstat`
// (node:sqlite has it; a driver without it prints the total only). Frames do not depend on the
// host's speed: two builds give the same figures on a loaded machine as on a quiet one.
//   node bench/sqliteWalPages.mjs <built checkout> [users=1] [calls=500] [warm=3000]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { billOneCall, creditedBilling } from './lib.mjs';

const [tree = '.', usersArg = '1', callsArg = '500', warmArg = '3000'] = process.argv.slice(2);
const [users, calls, warm] = [usersArg, callsArg, warmArg].map(Number);
const core = await import(pathToFileURL(`${resolve(tree)}/packages/core/dist/internal.js`).href);
const { createStorage, resolveConfig } = core;
const dir = mkdtempSync(join(tmpdir(), 'bench-wal-pages-'));
const storage = await createStorage(resolveConfig({ storage: { type: 'sqlite', dir } }).storage);
const billing = await creditedBilling(core, storage, users);
const call = (n) => billOneCall(billing, n, users);
for (let i = 0; i < warm; i++) await call(i);
// The store's own connection (it holds the file exclusively): checkpoints off, so the WAL only grows.
const db = storage.db;
db.exec('PRAGMA wal_checkpoint(TRUNCATE); PRAGMA wal_autocheckpoint = 0');
for (let i = 0; i < calls; i++) await call(warm + i);
const wal = readFileSync(`${storage.file}-wal`);
const pageSize = wal.readUInt32BE(8);
const pages = [];
// A 32-byte WAL header, then frames of a 24-byte header (the page number first) and the page.
for (let off = 32; off + 24 + pageSize <= wal.length; off += 24 + pageSize) pages.push(wal.readUInt32BE(off));
const owner = new Map();
try {
  for (const r of db.prepare('SELECT name, pageno, pagetype FROM dbstat').all()) owner.set(r.pageno, `${r.name} ${r.pagetype}`);
} catch {
  // No dbstat in this build of SQLite: the total alone.
}
const counts = new Map();
for (const p of pages) {
  const k = p === 1 ? 'page 1 (header, free-list count)' : (owner.get(p) ?? 'free or unmapped');
  counts.set(k, (counts.get(k) ?? 0) + 1);
}
console.log(`${tree}: ${users} user(s), ${calls} hold + settle after ${warm}, ${storage.driver}`);
console.log(`WAL frames per call: ${(pages.length / calls).toFixed(2)}`);
for (const [k, v] of [...counts].sort((a, b) => b[1] - a[1])) console.log(`  ${k}: ${(v / calls).toFixed(2)}`);
await billing.stop();
await storage.close();
rmSync(dir, { recursive: true, force: true });
