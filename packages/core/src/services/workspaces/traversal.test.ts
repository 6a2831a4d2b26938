import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkspaceConfigSchema } from '../../config/sections/workspaces.js';
import { CoreError } from '../../kernel/CoreError.js';
import { createLogger } from '../../kernel/Logger.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import { snapshot } from './__tests__/testFs.js';
import { TRAVERSAL_CORPUS, TRAVERSAL_SECRET, createTraversalFixture, expandCorpus, type TraversalFixture } from '@ai-backend/test-utils';
import { WorkspaceService } from './WorkspaceService.js';

type Outcome = { ok: true; value: unknown } | { ok: false; code: string };

async function run(fn: () => Promise<unknown>): Promise<Outcome> {
  try {
    return { ok: true, value: await fn() };
  } catch (err) {
    if (!(err instanceof CoreError)) throw err; // anything but a CoreError is a bug
    return { ok: false, code: err.appCode };
  }
}

const secretB64 = Buffer.from(TRAVERSAL_SECRET).toString('base64');
const leaks = (o: Outcome) => {
  const text = JSON.stringify(o);
  return text.includes(TRAVERSAL_SECRET) || text.includes(secretB64) || text.includes('INSIDE_BLOCKED') || text.includes('private key');
};

it('the corpus has at least 60 hostile paths', () => {
  expect(TRAVERSAL_CORPUS.length).toBeGreaterThanOrEqual(60);
  expect(new Set(TRAVERSAL_CORPUS.map((v) => v.path)).size).toBe(TRAVERSAL_CORPUS.length);
});

describe.each([false, true])('traversal corpus through WorkspaceService (followSymlinks %s)', (followSymlinks) => {
  let fixture: TraversalFixture;
  let service: WorkspaceService;
  let before: Record<string, string>;

  beforeAll(async () => {
    fixture = await createTraversalFixture();
    const config = WorkspaceConfigSchema.parse(fixture.config({ followSymlinks }));
    service = new WorkspaceService({ enabled: true, workspaces: { default: config } }, new MemoryStorage(), createLogger('silent'));
    before = await snapshot(fixture.base, '');
  });

  afterAll(async () => {
    // Nothing anywhere (outside the root, nor inside it) was created, changed or removed.
    expect(await snapshot(fixture.base, '')).toEqual(before);
    await rm(fixture.base, { recursive: true, force: true });
  });

  it.each(TRAVERSAL_CORPUS.map((v, i) => [i, v.path, v.why] as const))('#%i %j (%s)', async (i) => {
    const vector = expandCorpus(fixture)[i]!;
    const read = await run(() => service.readFile('default', vector.path, 'utf8'));
    const read64 = await run(() => service.readFile('default', vector.path, 'base64'));
    const write = await run(() => service.writeFile('default', vector.path, 'pwned', 'utf8'));
    const exists = await run(() => service.pathExists('default', vector.path));
    const list = await run(() => service.listFiles('default', vector.path, { recursive: true, includeDirectories: true }));
    for (const o of [read, read64, write, exists, list]) expect(leaks(o), JSON.stringify(o)).toBe(false);

    expect(write).toEqual({ ok: false, code: 'ACCESS_DENIED' });
    if (vector.lexical) {
      for (const o of [read, read64, exists, list]) expect(o).toEqual({ ok: false, code: 'ACCESS_DENIED' });
      return;
    }
    // Links: refused, or (dangling with followSymlinks) simply not there.
    for (const o of [read, read64, list]) expect(o.ok ? 'success' : o.code).toMatch(/^(ACCESS_DENIED|NOT_FOUND)$/);
    if (exists.ok) expect(exists.value).toMatchObject({ exists: false });
    else expect(exists.code).toBe('ACCESS_DENIED');
  });

  it('a full recursive listing shows nothing outside the root and nothing blocked', async () => {
    const all = await service.listFiles('default', '', { recursive: true, includeDirectories: true });
    expect(all).toEqual(['notes.txt', 'sub/']);
  });
});
