import { coreErrorOf } from '../../kernel/CoreError.js';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../config/resolveConfig.js';
import type { ConfigInput } from '../../config/schema.js';
import { createRuntime } from '../../createRuntime.js';
import { createLogger } from '../../kernel/Logger.js';
import type { Runtime } from '../../runtime/Runtime.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import type { Context } from '../../pipeline/context.js';
import type { Identity } from '../../kernel/identity.js';
import { WORKSPACE_READ_PROCEDURE } from './configResources.js';
import { callContext } from '../../pipeline/callContext.js';

/** The application code a refused read failed with (procedure calls fail wrapped by tRPC). */
const appCodeOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => coreErrorOf(e)?.appCode,
  );

let dir: string;
const runtimes: Runtime[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'cfg-res-unit-'));
  await writeFile(path.join(dir, 'a.md'), '# A');
  await writeFile(path.join(dir, 'secret.key'), 'k');
});
afterAll(async () => {
  await Promise.all(runtimes.map((r) => r.close()));
  await rm(dir, { recursive: true, force: true });
});

async function runtimeWith(input: ConfigInput): Promise<Runtime> {
  const rt = await createRuntime(resolveConfig({ storage: { type: 'memory' }, ...input }), {
    storage: new MemoryStorage(),
    logger: createLogger('silent'),
  });
  runtimes.push(rt);
  return rt;
}

const ctxFor = (rt: Runtime, identity: Identity | null): Context =>
  callContext(rt, {
    identity,
    credentialError: null,
    req: { transport: 'mcp', ip: '127.0.0.1', signal: new AbortController().signal, headers: new Headers() },
  });

const workspaces = (extra: object = {}) => ({ serverWorkspaces: { docs: { path: '', blockedExtensions: ['.key'], ...extra } } });

describe('config resources', () => {
  it('registers list entries, templates and one files template per workspace; workspace ones name system.readFile', async () => {
    const rt = await runtimeWith({
      mcp: { auth: { authType: 'none' } },
      serverWorkspaces: { docs: { path: dir, name: 'Docs' } },
      resources: {
        list: [
          { uri: 'workspace://docs/a.md', name: 'a', category: 'docs' },
          { uri: 'https://example.com/status.json', name: 'status', mimeType: 'application/json' },
        ],
        templates: [{ uriTemplate: 'https://example.com/items/{id}', name: 'item' }],
      },
    });
    expect(rt.resources.list().map((r) => r.uri)).toEqual(
      expect.arrayContaining(['workspace://docs/a.md', 'https://example.com/status.json']),
    );
    expect(rt.resources.list({ category: 'docs' }).map((r) => r.uri)).toEqual(['workspace://docs/a.md']);
    expect(rt.resources.listTemplates().map((t) => t.uriTemplate)).toEqual(
      expect.arrayContaining(['https://example.com/items/{id}', 'workspace://docs/{+path}']),
    );
    expect(rt.resources.procedureFor('workspace://docs/a.md')).toBe(WORKSPACE_READ_PROCEDURE);
    expect(rt.resources.procedureFor('workspace://docs/any/file.txt')).toBe(WORKSPACE_READ_PROCEDURE);
    expect(rt.resources.procedureFor('https://example.com/status.json')).toBeUndefined();
    expect(await rt.resources.read('workspace://docs/a.md', undefined, ctxFor(rt, null))).toMatchObject({
      content: '# A',
      mimeType: 'text/markdown',
    });
  });

  it('workspace reads are system.readFile calls: its access rules and the guard apply', async () => {
    const rt = await runtimeWith({ mcp: { auth: { authType: 'jwt' } }, jwt: { secret: 's'.repeat(40) }, ...workspaces({ path: dir }) });
    const user: Identity = { sub: 'u', scopes: [], isAdmin: false, via: 'jwt' };
    // Anonymous with authentication on: refused as the readFile tool is.
    expect(await appCodeOf(rt.resources.read('workspace://docs/a.md', undefined, ctxFor(rt, null)))).toBe('UNAUTHORIZED');
    expect((await rt.resources.read('workspace://docs/a.md', undefined, ctxFor(rt, user))).content).toBe('# A');
    // Our OAuth tokens need the call scope for it, like for the tool.
    const narrow: Identity = { sub: 'o', scopes: ['mcp'], isAdmin: false, via: 'oauth' };
    const oauthRt = await runtimeWith({ mcp: { auth: { authType: 'oauth' } }, ...workspaces({ path: dir }) });
    expect(await appCodeOf(oauthRt.resources.read('workspace://docs/a.md', undefined, ctxFor(oauthRt, narrow)))).toBe('INSUFFICIENT_SCOPE');
    // The guard: blocked extensions and traversal.
    await expect(rt.resources.read('workspace://docs/secret.key', undefined, ctxFor(rt, user))).rejects.toBeDefined();
    await expect(rt.resources.read('workspace://docs/%2e%2e/etc/passwd', undefined, ctxFor(rt, user))).rejects.toBeDefined();
  });

  it('workspaceFiles: false offers no files template', async () => {
    const rt = await runtimeWith({
      mcp: { auth: { authType: 'none' } },
      ...workspaces({ path: dir }),
      resources: { workspaceFiles: false },
    });
    expect(rt.resources.listTemplates().map((t) => t.uriTemplate)).not.toContain('workspace://docs/{+path}');
    expect(await appCodeOf(rt.resources.read('workspace://docs/a.md', undefined, ctxFor(rt, null)))).toBe('NOT_FOUND');
  });
});
