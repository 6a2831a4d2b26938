import { spawn, type ChildProcess } from 'node:child_process';
import { appendFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, beforeEach, afterEach, describe, expect, it } from 'vitest';
import { FileStorage } from './FileStorage.js';

/**
 * Durability of the file backend against real crashes: a child process streams writes and
 * prints each one only after its promise resolved; we kill -9 it mid-stream, reopen the
 * directory and check that every acknowledged write is there and the store opens cleanly.
 */

const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const fileStorageUrl = new URL('./FileStorage.ts', import.meta.url).href;

const CHILD = `
import { FileStorage } from ${JSON.stringify(fileStorageUrl)};
const [mode, dir, roundArg] = process.argv.slice(2);
const round = Number(roundArg);
const out = (line) => process.stdout.write(line + '\\n');
const store = await FileStorage.open(dir, { compactAfterBytes: 32 * 1024 });
out('READY ' + process.pid);
if (mode === 'hold') setInterval(() => undefined, 1000); // keep the store open until killed
if (mode === 'stream') {
  const pad = 'x'.repeat(200);
  const worker = async (w) => {
    for (let i = 0; ; i++) {
      switch (i % 5) {
        case 0: await store.set('k:' + round + ':' + w + ':' + i, { round, w, i, pad }); out('S ' + w + ' ' + i); break;
        case 1: out('I ' + (await store.increment('ctr', 1))); break;
        case 2: out('A ' + (await store.append('L', { round, w, i })) + ' ' + w + ' ' + i); break;
        case 3: await store.set('last:' + w, { round, i }); out('O ' + w + ' ' + i); break;
        case 4: await store.set('tmp:' + w, i); await store.delete('tmp:' + w); out('D ' + w + ' ' + i); break;
      }
    }
  };
  for (let w = 0; w < 16; w++) void worker(w);
}
`;

let workDir: string;
let childScript: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'storage-crash-'));
  childScript = join(workDir, 'child.mjs');
  await writeFile(childScript, CHILD);
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await rm(workDir, { recursive: true, force: true });
});

interface Child {
  proc: ChildProcess;
  lines: string[];
  exited: Promise<void>;
  /** Resolves once the child has printed `count` lines after READY. */
  waitFor(count: number): Promise<void>;
}

function startChild(mode: 'stream' | 'hold', dir: string, round = 0): Child {
  const proc = spawn(process.execPath, ['--import', tsxLoader, childScript, mode, dir, String(round)], {
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

describe('file storage survives kill -9', () => {
  it('keeps every acknowledged write over several crash/restart rounds', async () => {
    const dir = join(workDir, 'stream');
    const sets = new Map<string, { round: number; w: number; i: number }>();
    const logged = new Map<number, { round: number; w: number; i: number }>();
    const last = new Map<number, { round: number; i: number }>();
    let maxCounter = 0;

    for (let round = 1; round <= 4; round++) {
      const child = startChild('stream', dir, round);
      await child.waitFor(300 + round * 400);
      child.proc.kill('SIGKILL');
      await child.exited;
      expect(child.proc.signalCode).toBe('SIGKILL');

      // Only complete lines count: a line cut by the kill was never printed in full.
      for (const line of child.lines.slice(1)) {
        const [op, a, b, c] = line.split(' ');
        if (op === 'S') sets.set(`k:${round}:${a}:${b}`, { round, w: Number(a), i: Number(b) });
        if (op === 'I') maxCounter = Math.max(maxCounter, Number(a));
        if (op === 'A') logged.set(Number(a), { round, w: Number(b), i: Number(c) });
        if (op === 'O') last.set(Number(a), { round, i: Number(b) });
      }

      const store = await FileStorage.open(dir);
      try {
        for (const [key, expected] of sets) expect(await store.get(key)).toMatchObject(expected);
        expect(await store.get<number>('ctr')).toBeGreaterThanOrEqual(maxCounter);
        const log = await store.readLog<{ round: number; w: number; i: number }>('L');
        expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1)); // gapless
        for (const [seq, record] of logged) expect(log[seq - 1]?.record).toEqual(record);
        for (const [w, acked] of last) {
          const stored = await store.get<{ round: number; i: number }>(`last:${w}`);
          // The acknowledged value, or one written after it.
          expect(stored!.round * 1e9 + stored!.i).toBeGreaterThanOrEqual(acked.round * 1e9 + acked.i);
        }
        expect(await store.health()).toEqual({ ok: true });
      } finally {
        await store.close();
      }
    }
    expect(sets.size).toBeGreaterThan(500);
    expect(logged.size).toBeGreaterThan(500);
    // The small compaction threshold made the child compact while it was being killed.
    expect((await readdir(dir)).filter((f) => f.startsWith('snapshot'))).toContain('snapshot');
  }, 120_000);

  it('refuses a second process on the same directory, and takes over once its owner is killed', async () => {
    const dir = join(workDir, 'lock');
    const child = startChild('hold', dir);
    await child.waitFor(0);
    const pid = child.proc.pid!;
    await expect(FileStorage.open(dir)).rejects.toMatchObject({ appCode: 'CONFLICT' });
    await expect(FileStorage.open(dir)).rejects.toThrow(new RegExp(`in use by process ${pid} on `));
    child.proc.kill('SIGKILL');
    await child.exited;
    const store = await FileStorage.open(dir);
    await store.close();
  }, 30_000);
});

describe('file storage recovery', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storage-recovery-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const journals = async () => (await readdir(dir)).filter((f) => /^journal\.\d+\.log$/.test(f));

  it('drops a torn last record and keeps appending after it', async () => {
    const a = await FileStorage.open(dir);
    await a.set('kept', 1);
    await a.append('log', 'one');
    await a.close();
    const [journal] = await journals();
    await appendFile(join(dir, journal!), '0badc0de {"n":99,"o":"s","k":"torn","v":');

    const b = await FileStorage.open(dir);
    expect(b.recovery.bytes).toBeGreaterThan(0);
    expect(await b.get('kept')).toBe(1);
    expect(await b.get('torn')).toBeUndefined();
    await b.set('after', 2);
    expect(await b.append('log', 'two')).toBe(2);
    await b.close();

    const c = await FileStorage.open(dir);
    expect(c.recovery.bytes).toBe(0);
    expect(await c.get('after')).toBe(2);
    expect((await c.readLog('log')).map((e) => e.record)).toEqual(['one', 'two']);
    await c.close();
  });

  it('drops a last record whose checksum does not match', async () => {
    const a = await FileStorage.open(dir);
    await a.set('x', 'good');
    await a.set('x', 'flipped');
    await a.close();
    const path = join(dir, (await journals())[0]!);
    const text = await readFile(path, 'utf8');
    await writeFile(path, text.replace('"flipped"', '"flopped"'));
    const b = await FileStorage.open(dir);
    expect(b.recovery.problem).toMatch(/checksum/);
    expect(await b.get('x')).toBe('good');
    await b.close();
  });

  it('compacts into a snapshot, removes covered journals and replays to the same state', async () => {
    const a = await FileStorage.open(dir, { compactAfterBytes: 4096 });
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 3000; i++) {
      writes.push(a.set(`k${i % 500}`, { i }), a.increment('n', 1), a.append('log', i));
      if (i % 100 === 0) await Promise.all(writes.splice(0));
    }
    await a.set('expired', 1, { ttlMs: 1 });
    await Promise.all(writes);
    await a.close();
    const files = await readdir(dir);
    expect(files).toContain('snapshot');
    expect((await journals()).length).toBeLessThanOrEqual(2);
    expect(await readFile(join(dir, 'snapshot'), 'utf8')).not.toContain('"expired"');

    const b = await FileStorage.open(dir);
    expect(await b.get('n')).toBe(3000);
    for (let k = 0; k < 500; k++) expect(await b.get(`k${k}`)).toEqual({ i: 2500 + k });
    const log = await b.readLog<number>('log');
    expect(log).toHaveLength(3000);
    expect(log.every((e, idx) => e.seq === idx + 1 && e.record === idx)).toBe(true);
    await b.close();
  });

  it('refuses to open a corrupt snapshot instead of serving a partial state', async () => {
    const a = await FileStorage.open(dir, { compactAfterBytes: 1024 });
    for (let i = 0; i < 200; i++) await a.set(`k${i}`, 'v'.repeat(20));
    await a.close();
    const path = join(dir, 'snapshot');
    const text = await readFile(path, 'utf8');
    await writeFile(path, text.replace('vvvv', 'vvvw'));
    await expect(FileStorage.open(dir)).rejects.toThrow(/snapshot .* is corrupt/);
    await expect(FileStorage.open(dir)).rejects.toMatchObject({ appCode: 'INTERNAL' });
  });

  it('never takes over a lock held from another host', async () => {
    const lock = { pid: 1, hostname: `not-${hostname()}`, token: 'elsewhere', since: new Date().toISOString() };
    await writeFile(join(dir, 'LOCK'), JSON.stringify(lock));
    await expect(FileStorage.open(dir)).rejects.toThrow(/in use by process 1 on not-/);
  });

  it('takes over a lock whose owner process is gone', async () => {
    const dead = spawn(process.execPath, ['-e', '0']);
    await new Promise((r) => dead.once('exit', r));
    const lock = { pid: dead.pid, hostname: hostname(), token: 'gone', since: new Date().toISOString() };
    await writeFile(join(dir, 'LOCK'), JSON.stringify(lock));
    const store = await FileStorage.open(dir);
    const held = JSON.parse(await readFile(join(dir, 'LOCK'), 'utf8')) as { pid: number };
    expect(held.pid).toBe(process.pid);
    await store.close();
    await expect(readFile(join(dir, 'LOCK'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

