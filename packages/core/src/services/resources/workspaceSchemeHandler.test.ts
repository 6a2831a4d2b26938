import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkspaceConfigSchema } from '../../config/sections/workspaces.js';
import { createLogger } from '../../kernel/Logger.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import { WorkspaceService } from '../workspaces/WorkspaceService.js';
import { ResourceRegistry } from './ResourceRegistry.js';
import {
  connectWorkspaceResources,
  createWorkspaceSchemeHandler,
  parseWorkspaceUri,
  workspaceResourceUri,
} from './workspaceSchemeHandler.js';

let base: string;
let service: WorkspaceService;
let registry: ResourceRegistry;

beforeAll(async () => {
  base = await mkdtemp(path.join(os.tmpdir(), 'aib-wsuri-'));
  const root = path.join(base, 'root');
  await mkdir(path.join(root, 'sub dir'), { recursive: true });
  await writeFile(path.join(root, 'notes.md'), 'in MyDocs');
  await writeFile(path.join(root, 'sub dir', 'a b.txt'), 'spaced');
  await writeFile(path.join(base, 'outside.md'), 'OUTSIDE');
  const other = path.join(base, 'other');
  await mkdir(other);
  await writeFile(path.join(other, 'notes.md'), 'in mydocs (lower case)');
  service = new WorkspaceService(
    {
      enabled: true,
      workspaces: { MyDocs: WorkspaceConfigSchema.parse({ path: root }), mydocs: WorkspaceConfigSchema.parse({ path: other }) },
    },
    new MemoryStorage(),
    createLogger('silent'),
  );
  registry = new ResourceRegistry();
  connectWorkspaceResources(service, registry);
});

afterAll(async () => {
  await service.close();
  await rm(base, { recursive: true, force: true });
});

const read = async (uri: string) => {
  registry.register({ uri, name: uri });
  return registry.read(uri).then(
    (r) => r.content,
    (e: { appCode?: string }) => `error:${e.appCode}`,
  );
};

describe('workspace:// URIs', () => {
  it('keep the case of the workspace id (MyDocs and mydocs are different workspaces)', async () => {
    expect(await read('workspace://MyDocs/notes.md')).toBe('in MyDocs');
    expect(await read('workspace://mydocs/notes.md')).toBe('in mydocs (lower case)');
    expect(await read(workspaceResourceUri('MyDocs', 'sub dir/a b.txt'))).toBe('spaced');
  });

  it('are read literally: dot segments, encoded or not, reach the guard and are refused', async () => {
    // new URL() would turn these into workspace://MyDocs/notes.md (or /outside.md) silently.
    for (const uri of [
      'workspace://MyDocs/x/../notes.md',
      'workspace://MyDocs/%2e%2e/outside.md',
      'workspace://MyDocs/%2E%2E/%2e%2e/outside.md',
    ]) {
      expect(await read(uri), uri).toBe('error:ACCESS_DENIED');
    }
    expect(await read('workspace://MyDocs/%252e%252e/outside.md')).toBe('error:ACCESS_DENIED');
    expect(await read('workspace://MyDocs/./notes.md')).toBe('in MyDocs'); // '.' components are dropped, as for readFile
    expect(await read('workspace://MyDocs/bad%E0%A4%A.md')).toBe('error:ACCESS_DENIED');
  });

  it('parseWorkspaceUri splits id and path from the raw text', () => {
    expect(parseWorkspaceUri('workspace://MyDocs/sub%20dir/a%20b.txt')).toEqual({ workspaceId: 'MyDocs', rel: 'sub dir/a b.txt' });
    expect(parseWorkspaceUri('WORKSPACE://Ab.C-d_1/x/../y')).toEqual({ workspaceId: 'Ab.C-d_1', rel: 'x/../y' });
    for (const bad of [
      'workspace://MyDocs',
      'workspace://MyDocs/',
      'workspace:///notes.md',
      'workspace://MyDocs/a?x=1',
      'workspace://MyDocs/a#f',
      'file:///etc/passwd',
    ]) {
      expect(() => parseWorkspaceUri(bad), bad).toThrow(/not found/);
    }
  });

  it('the handler falls back to the URL serialisation when no raw text is given', async () => {
    const handler = createWorkspaceSchemeHandler(service);
    expect((await handler.read(new URL('workspace://MyDocs/notes.md'))).content).toBe('in MyDocs');
  });
});
