import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SQLITE_DRIVERS } from './__tests__/sqliteDrivers.js';

/**
 * A process that opens, uses and closes many SQLite stores while the garbage collector runs at
 * ordinary moments (between I/O callbacks, not from an explicit gc()) exits cleanly. On Node 24,
 * better-sqlite3 12 aborts the process when V8 collects one of its handles (see `retained` in
 * betterSqlite3Driver.ts); node:sqlite keeps no handles alive and must not need to. Runs on every
 * driver that loads on the Node running the suite; CI runs it on Node 22, 24 and 26.
 */
const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const storageSrc = JSON.stringify(new URL('./SqliteStorage.ts', import.meta.url).href);

const CHILD = `
import { createServer, request } from 'node:http';
import { join } from 'node:path';
import { SqliteStorage } from ${storageSrc};
const [dir, driver] = process.argv.slice(2);
const server = createServer((_req, res) => res.end('x')).listen(0, '127.0.0.1');
await new Promise((r) => server.once('listening', r));
const { port } = server.address();
const get = () => new Promise((r) => request({ port, host: '127.0.0.1' }, (res) => { res.resume(); res.on('end', r); }).end());
for (let round = 0; round < 60; round++) {
  const store = await SqliteStorage.open({ file: join(dir, 'db-' + round + '.sqlite'), driver });
  for (let i = 0; i < 20; i++) await store.set('k' + i, { round, i });
  await store.health();
  await store.close();
  // Garbage, so that V8 collects while I/O callbacks run, as in a real server.
  const junk = [];
  for (let i = 0; i < 3000; i++) junk.push({ a: new Array(40).fill(i) });
  await get();
}
server.close();
process.stdout.write('done\\n');
`;

describe.each(SQLITE_DRIVERS)('SqliteStorage handles on %s', (driver) => {
  it('opening and closing many stores under ordinary garbage collection never aborts the process', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ai-backend-sqlite-handles-'));
    try {
      const script = join(dir, 'child.mjs');
      await writeFile(script, CHILD);
      const { code, signal, out, err } = await new Promise<{
        code: number | null;
        signal: NodeJS.Signals | null;
        out: string;
        err: string;
      }>((resolve) => {
        const proc = spawn(process.execPath, ['--max-semi-space-size=1', '--import', tsxLoader, script, dir, driver], {
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        let err = '';
        proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
        proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
        proc.once('exit', (code, signal) => resolve({ code, signal, out, err }));
      });
      expect({ code, signal, aborted: /Assertion failed/.test(err) }, err.slice(0, 2000)).toEqual({
        code: 0,
        signal: null,
        aborted: false,
      });
      expect(out).toContain('done');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
