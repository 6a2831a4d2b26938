import { mkdir, mkdtemp, rm, writeFile as fsWrite } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { waitFor } from '@ai-backend/test-utils';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WorkspaceConfigSchema, type WorkspaceConfigInput } from '../../config/sections/workspaces.js';
import { createLogger } from '../../kernel/Logger.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import { expectCode } from './__tests__/testFs.js';
import type { WorkspaceChange } from './WorkspaceWatcher.js';
import { SERVER_WORKSPACE_KEY, WorkspaceService } from './WorkspaceService.js';

let base: string;
const dirs: Record<string, string> = {};
const services: WorkspaceService[] = [];

function make(workspaces: Record<string, WorkspaceConfigInput>, storage = new MemoryStorage(), enabled = true): WorkspaceService {
  const parsed = Object.fromEntries(Object.entries(workspaces).map(([id, c]) => [id, WorkspaceConfigSchema.parse(c)]));
  const s = new WorkspaceService({ enabled, workspaces: parsed }, storage, createLogger('silent'));
  services.push(s);
  return s;
}

beforeEach(async () => {
  base = await mkdtemp(path.join(os.tmpdir(), 'aib-wss-'));
  for (const name of ['one', 'two', 'three']) {
    dirs[name] = path.join(base, name);
    await mkdir(dirs[name]!);
    await fsWrite(path.join(dirs[name]!, 'who.txt'), name);
  }
});
afterEach(async () => {
  for (const s of services.splice(0)) await s.close();
  await rm(base, { recursive: true, force: true });
});

const who = async (s: WorkspaceService, id?: string) => (await s.readFile(id ?? 'default', 'who.txt', 'utf8')).content;

describe('the default workspace', () => {
  it('is the workspace with id "default" when configured', async () => {
    const s = make({ one: { path: dirs.one! }, default: { path: dirs.two! } });
    expect(await who(s)).toBe('two');
    expect(await who(s, 'one')).toBe('one');
  });

  it('else the first configured one', async () => {
    const s = make({ two: { path: dirs.two! }, one: { path: dirs.one! } });
    expect(await who(s)).toBe('two');
    expect((await s.list({ includePaths: false })).two?.isDefault).toBe(true);
  });

  it('else the first one added at run time', async () => {
    const s = make({});
    await expectCode(who(s), 'NO_WORKSPACES');
    await s.add('later', { path: dirs.three! });
    expect(await who(s)).toBe('three');
  });

  it('no workspaces, or workspaces disabled: "no workspaces available"', async () => {
    const err = await expectCode(who(make({})), 'NO_WORKSPACES');
    expect(err.message).toBe('no workspaces available');
    await expectCode(who(make({ one: { path: dirs.one! } }, new MemoryStorage(), false)), 'NO_WORKSPACES');
  });

  it('an unknown id is "workspace not found"', async () => {
    const s = make({ one: { path: dirs.one! } });
    const err = await expectCode(who(s, 'nope'), 'NOT_FOUND');
    expect(err.message).toBe('workspace not found');
    await expectCode(who(s, '../one'), 'NOT_FOUND');
    // Names of the config object's prototype are not workspaces either.
    for (const id of ['toString', 'constructor', 'valueOf', 'hasOwnProperty', '__proto__']) await expectCode(who(s, id), 'NOT_FOUND');
  });
});

describe('run-time workspaces', () => {
  it('are persisted, usable at once, and seen by another server sharing the storage', async () => {
    const storage = new MemoryStorage();
    const a = make({ one: { path: dirs.one! } }, storage);
    const b = make({ one: { path: dirs.one! } }, storage);
    expect(await a.add('extra', { path: dirs.two!, readOnly: true }, 'admin-1')).toEqual({
      success: true,
      id: 'extra',
      message: "server workspace 'extra' added",
    });
    expect(await storage.get(SERVER_WORKSPACE_KEY + 'extra')).toMatchObject({
      config: { path: dirs.two, readOnly: true },
      addedBy: 'admin-1',
    });
    expect(await who(a, 'extra')).toBe('two');
    expect(await who(b, 'extra')).toBe('two');
    await expectCode(b.writeFile('extra', 'x.txt', 'x', 'utf8'), 'ACCESS_DENIED');
    await b.remove('extra');
    await expectCode(who(a, 'extra'), 'NOT_FOUND');
  });

  it('refuse bad ids, duplicates, configured ids, relative or missing folders', async () => {
    const s = make({ one: { path: dirs.one! } });
    await expectCode(s.add('one', { path: dirs.two! }), 'CONFLICT');
    await expectCode(s.add('default', { path: dirs.two! }), 'BAD_REQUEST');
    await expectCode(s.add('../x', { path: dirs.two! }), 'BAD_REQUEST');
    await expectCode(s.add('rel', { path: 'relative/dir' }), 'BAD_REQUEST');
    await expectCode(s.add('gone', { path: path.join(base, 'missing') }), 'BAD_REQUEST');
    await expectCode(s.add('file', { path: path.join(dirs.one!, 'who.txt') }), 'BAD_REQUEST');
    await s.add('x', { path: dirs.two! });
    await expectCode(s.add('x', { path: dirs.three! }), 'CONFLICT');
    await expectCode(s.remove('one'), 'FORBIDDEN');
    await expectCode(s.remove('never'), 'NOT_FOUND');
    // An id that is a name of the config object's prototype is an id like any other.
    await expectCode(s.remove('toString'), 'NOT_FOUND');
    await s.add('valueOf', { path: dirs.three! });
    expect(await who(s, 'valueOf')).toBe('three');
    await s.remove('valueOf');
    await expectCode(make({}, new MemoryStorage(), false).add('y', { path: dirs.two! }), 'FORBIDDEN');
  });

  it('two servers adding the same id at once: exactly one wins', async () => {
    const storage = new MemoryStorage();
    const [a, b] = [make({}, storage), make({}, storage)];
    const results = await Promise.allSettled([a.add('race', { path: dirs.one! }), b.add('race', { path: dirs.two! })]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  });
});

describe('getServerWorkspaces', () => {
  it('reports accessibility and shows folder paths only when asked', async () => {
    const s = make({
      one: { path: dirs.one!, name: 'One', description: 'first', blockedPaths: ['x'] },
      lost: { path: path.join(base, 'lost'), readOnly: true },
    });
    await s.add('added', { path: dirs.two! });
    const plain = await s.list({ includePaths: false });
    expect(Object.keys(plain)).toEqual(['one', 'lost', 'added']);
    expect(plain.one).toMatchObject({
      name: 'One',
      description: 'first',
      accessible: true,
      writable: true,
      hasPathRules: true,
      source: 'config',
      isDefault: true,
    });
    expect(plain.lost).toMatchObject({ name: 'lost', accessible: false, writable: false, readOnly: true });
    expect(plain.added).toMatchObject({ source: 'runtime', accessible: true, isDefault: false });
    expect(JSON.stringify(plain)).not.toContain(base);
    const admin = await s.list({ includePaths: true });
    expect(admin.one?.path).toBe(dirs.one);
  });
});

describe('enableWatching', () => {
  const seen = (events: WorkspaceChange[], pred: (e: WorkspaceChange) => boolean) =>
    waitFor(() => events.some(pred), { what: 'a change event' });

  it('reports changes to reachable files, not to blocked ones, and stops on close', async () => {
    const s = make({ one: { path: dirs.one!, enableWatching: true, blockedPaths: ['**/.env'] } });
    await s.start();
    const events: WorkspaceChange[] = [];
    s.onChange((e) => events.push(e));
    await fsWrite(path.join(dirs.one!, '.env'), 'SECRET=1');
    await fsWrite(path.join(dirs.one!, 'seen.txt'), 'x');
    await seen(events, (e) => e.path === 'seen.txt');
    expect(events.every((e) => e.workspaceId === 'one')).toBe(true);
    expect(events.some((e) => e.path.includes('.env'))).toBe(false);
    await s.close();
    const count = events.length;
    await fsWrite(path.join(dirs.one!, 'after.txt'), 'x');
    // Asserting that nothing arrives: a watcher would report within this window (a deliberate pause).
    await new Promise((r) => setTimeout(r, 150));
    expect(events.length).toBe(count);
  });

  it('watches a workspace added at run time', async () => {
    const s = make({});
    const events: WorkspaceChange[] = [];
    s.onChange((e) => events.push(e));
    await s.add('w', { path: dirs.two!, enableWatching: true });
    await fsWrite(path.join(dirs.two!, 'new.txt'), 'x');
    await seen(events, (e) => e.workspaceId === 'w' && e.path === 'new.txt');
  });
});
