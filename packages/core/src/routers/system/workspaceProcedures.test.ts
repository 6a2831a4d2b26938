import { mkdir, readFile as fsRead, rm, writeFile as fsWrite } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../config/resolveConfig.js';
import type { ConfigInput } from '../../config/schema.js';
import { coreErrorOf } from '../../kernel/CoreError.js';
import { createRuntime } from '../../createRuntime.js';
import { createLogger } from '../../kernel/Logger.js';
import type { Runtime } from '../../runtime/Runtime.js';
import { snapshot } from '../../services/workspaces/__tests__/testFs.js';
import { TRAVERSAL_SECRET, createTraversalFixture, expandCorpus, type TraversalFixture } from '@ai-backend/test-utils';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import type { Context } from '../../pipeline/context.js';
import type { Identity } from '../../kernel/identity.js';
import { createCallerFactory } from '../../pipeline/init.js';
import { invoke, procedureIndex } from '../../pipeline/invoke.js';
import { callContext } from '../../pipeline/callContext.js';

const alice: Identity = { sub: 'alice', scopes: [], isAdmin: false, via: 'jwt' };
const bob: Identity = { sub: 'bob', scopes: [], isAdmin: false, via: 'jwt' };
const admin: Identity = { sub: 'root', scopes: ['admin'], isAdmin: true, via: 'jwt' };

let fixture: TraversalFixture;
let runtimes: Runtime[] = [];

async function makeRuntime(input: ConfigInput): Promise<Runtime> {
  // Open server unless a test configures authentication (the access policy has its own tests).
  // The traversal corpus is hundreds of tool calls from one caller: past the default rate limits,
  // which are not what these tests are about, so they are off here.
  const rt = await createRuntime(
    resolveConfig({ storage: { type: 'memory' }, mcp: { auth: { authType: 'none' }, rateLimiting: { enabled: false } }, ...input }),
    { storage: new MemoryStorage(), logger: createLogger('silent') },
  );
  runtimes.push(rt);
  return rt;
}

function ctxFor(rt: Runtime, identity: Identity | null, mcp?: { sessionId?: string; toolName: string }): Context {
  return callContext(rt, {
    identity,
    credentialError: null,
    req: { transport: mcp ? 'mcp' : 'rpc', ip: '127.0.0.1', signal: new AbortController().signal, headers: new Headers() },
    ...(mcp && {
      mcp: {
        ...mcp,
        progressWanted: false,
        progress: async () => undefined,
        log: async () => undefined,
        request: async () => {
          throw new Error('no client');
        },
      },
    }),
  });
}

/** Call through the invoke seam (what /rpc and /mcp use); returns data or the CoreError's app code. */
async function call(
  rt: Runtime,
  procedure: string,
  input: unknown,
  identity: Identity | null = null,
  mcp?: { sessionId?: string; toolName: string },
) {
  const r = await invoke(rt.router, procedure, input, ctxFor(rt, identity, mcp));
  if (r.ok) return { ok: true as const, data: r.data as any };
  return { ok: false as const, code: coreErrorOf(r.error)?.appCode ?? r.error.code, message: r.error.message };
}

beforeEach(async () => {
  fixture = await createTraversalFixture();
});
afterEach(async () => {
  for (const rt of runtimes) await rt.close();
  runtimes = [];
  await rm(fixture.base, { recursive: true, force: true });
});

const workspaceConfig = (): ConfigInput => ({
  serverWorkspaces: { default: fixture.config(), docs: { ...fixture.config(), readOnly: true, allowedExtensions: ['.txt'] } },
});

describe('system workspace procedures', () => {
  it('are MCP tools with the spec names and annotations', async () => {
    const rt = await makeRuntime({});
    const tools = new Map([...procedureIndex(rt.router).values()].filter((p) => p.meta?.mcp).map((p) => [p.meta!.mcp!.name, p]));
    const expected = {
      getServerWorkspaces: { readOnlyHint: true },
      listFiles: { readOnlyHint: true },
      readFile: { readOnlyHint: true },
      pathExists: { readOnlyHint: true },
      writeFile: { readOnlyHint: false, destructiveHint: true },
      addServerWorkspace: { readOnlyHint: false, destructiveHint: false },
      removeServerWorkspace: { destructiveHint: true },
      registerClientWorkspace: { readOnlyHint: false },
      unregisterClientWorkspace: { destructiveHint: true },
      listClientWorkspaces: { readOnlyHint: true },
    };
    for (const [name, annotations] of Object.entries(expected)) {
      const tool = tools.get(name);
      expect(tool?.path, name).toBe(`system.${name}`);
      expect(tool?.meta?.mcp?.annotations).toMatchObject(annotations);
      expect(tool?.type).toBe(
        ['writeFile', 'addServerWorkspace', 'removeServerWorkspace', 'registerClientWorkspace', 'unregisterClientWorkspace'].includes(name)
          ? 'mutation'
          : 'query',
      );
    }
  });

  it('read, write, exists and list through a tRPC caller', async () => {
    const rt = await makeRuntime(workspaceConfig());
    const caller = createCallerFactory(rt.router)(ctxFor(rt, null)) as any;
    expect(await caller.system.readFile({ path: 'notes.txt' })).toEqual({
      content: 'inside notes',
      size: 12,
      encoding: 'utf8',
      mimeType: 'text/plain',
    });
    expect(await caller.system.writeFile({ path: 'new/dir/file.txt', content: 'aGk=', encoding: 'base64' })).toEqual({
      success: true,
      path: 'new/dir/file.txt',
      size: 2,
    });
    expect(await fsRead(path.join(fixture.root, 'new/dir/file.txt'), 'utf8')).toBe('hi');
    expect(await caller.system.pathExists({ workspaceId: 'default', path: 'new/dir' })).toEqual({ exists: true, path: 'new/dir' });
    expect(await caller.system.listFiles()).toEqual(['new/', 'notes.txt', 'sub/']);
    expect(await caller.system.listFiles({ path: 'new', recursive: true, includeDirectories: false })).toEqual(['new/dir/file.txt']);
    // The read-only "docs" workspace on the same folder, only .txt files.
    expect(await caller.system.listFiles({ workspaceId: 'docs', recursive: true, includeDirectories: false })).toEqual([
      'new/dir/file.txt',
      'notes.txt',
    ]);
    await expect(caller.system.writeFile({ workspaceId: 'docs', path: 'x.txt', content: 'x' })).rejects.toMatchObject({
      code: 'FORBIDDEN',
      message: 'access denied',
    });
  });

  it('the traversal corpus through invoke: refused, nothing leaked, nothing written', async () => {
    const rt = await makeRuntime({ serverWorkspaces: { default: fixture.config({ followSymlinks: true }) } });
    const before = await snapshot(fixture.base, '');
    for (const v of expandCorpus(fixture)) {
      const results = [
        await call(rt, 'system.readFile', { path: v.path }),
        await call(rt, 'system.readFile', { path: v.path, encoding: 'base64' }),
        await call(rt, 'system.writeFile', { path: v.path, content: 'pwned' }),
        await call(rt, 'system.pathExists', { path: v.path }),
        await call(rt, 'system.listFiles', { path: v.path, recursive: true }),
      ];
      expect(JSON.stringify(results)).not.toContain(TRAVERSAL_SECRET);
      expect(results[2], v.path).toMatchObject({ ok: false, code: 'ACCESS_DENIED', message: 'access denied' });
      for (const r of results)
        expect(String(r.ok ? (r.data.exists ?? 'data') : r.code), `${v.path}: ${JSON.stringify(r)}`).toMatch(
          /^(ACCESS_DENIED|NOT_FOUND|false)$/,
        );
    }
    expect(await snapshot(fixture.base, '')).toEqual(before);
  });

  it('workspaceId is checked at request time: unknown → not found; none configured → no workspaces', async () => {
    const rt = await makeRuntime(workspaceConfig());
    expect(await call(rt, 'system.readFile', { workspaceId: 'nope', path: 'notes.txt' })).toMatchObject({
      ok: false,
      code: 'NOT_FOUND',
      message: 'workspace not found',
    });
    const empty = await makeRuntime({});
    for (const [p, input] of [
      ['system.readFile', { path: 'x' }],
      ['system.writeFile', { path: 'x', content: '' }],
      ['system.listFiles', {}],
      ['system.pathExists', { path: 'x' }],
    ] as const) {
      expect(await call(empty, p, input)).toMatchObject({ ok: false, code: 'NO_WORKSPACES', message: 'no workspaces available' });
    }
    expect(await call(empty, 'system.getServerWorkspaces', undefined)).toEqual({ ok: true, data: {} });
  });

  it('add/remove are admin-only; an added workspace is usable at once; paths shown to admins only', async () => {
    const rt = await makeRuntime(workspaceConfig());
    const extra = path.join(fixture.base, 'extra');
    await mkdir(extra);
    await fsWrite(path.join(extra, 'hello.txt'), 'from extra');
    const input = { id: 'extra', config: { path: extra } };
    expect(await call(rt, 'system.addServerWorkspace', input, null)).toMatchObject({ ok: false, code: 'UNAUTHORIZED' });
    expect(await call(rt, 'system.addServerWorkspace', input, alice)).toMatchObject({ ok: false, code: 'FORBIDDEN' });
    expect(await call(rt, 'system.addServerWorkspace', input, admin)).toEqual({
      ok: true,
      data: { success: true, id: 'extra', message: "server workspace 'extra' added" },
    });
    expect(await call(rt, 'system.readFile', { workspaceId: 'extra', path: 'hello.txt' })).toMatchObject({
      ok: true,
      data: { content: 'from extra' },
    });

    const seenByUser = await call(rt, 'system.getServerWorkspaces', undefined, alice);
    expect(Object.keys(seenByUser.data)).toEqual(['default', 'docs', 'extra']);
    expect(JSON.stringify(seenByUser.data)).not.toContain(fixture.base);
    const seenByAdmin = await call(rt, 'system.getServerWorkspaces', undefined, admin);
    expect(seenByAdmin.data.extra).toMatchObject({ path: extra, accessible: true, source: 'runtime' });

    expect(await call(rt, 'system.removeServerWorkspace', { id: 'extra' }, alice)).toMatchObject({ ok: false, code: 'FORBIDDEN' });
    expect(await call(rt, 'system.removeServerWorkspace', { id: 'default' }, admin)).toMatchObject({ ok: false, code: 'FORBIDDEN' });
    expect(await call(rt, 'system.removeServerWorkspace', { id: 'extra' }, admin)).toMatchObject({ ok: true, data: { success: true } });
    expect(await call(rt, 'system.readFile', { workspaceId: 'extra', path: 'hello.txt' })).toMatchObject({ ok: false, code: 'NOT_FOUND' });
    // Invalid configs are refused by the input schema.
    expect(
      await call(rt, 'system.addServerWorkspace', { id: 'bad', config: { path: extra, allowedExtensions: ['txt'] } }, admin),
    ).toMatchObject({ ok: false, code: 'BAD_REQUEST' });
  });

  it('the tool-call auth rules apply to the file tools, over MCP and every other entry point', async () => {
    const rt = await makeRuntime({ ...workspaceConfig(), mcp: { auth: { authType: 'oauth' } } });
    const mcp = { sessionId: 's1', toolName: 'readFile' };
    expect(await call(rt, 'system.readFile', { path: 'notes.txt' }, null, mcp)).toMatchObject({ ok: false, code: 'UNAUTHORIZED' });
    expect(await call(rt, 'system.readFile', { path: 'notes.txt' }, null)).toMatchObject({ ok: false, code: 'UNAUTHORIZED' });
    expect(await call(rt, 'system.readFile', { path: 'notes.txt' }, alice, mcp)).toMatchObject({ ok: true });
    const open = await makeRuntime({ ...workspaceConfig(), mcp: { auth: { authType: 'none' } } });
    expect(await call(open, 'system.readFile', { path: 'notes.txt' }, null, mcp)).toMatchObject({
      ok: true,
      data: { content: 'inside notes' },
    });
  });

  it('writes are never anonymous once authentication is configured, whatever the tool rules say', async () => {
    const rt = await makeRuntime({
      ...workspaceConfig(),
      mcp: { auth: { authType: 'jwt', requireAuthForToolsCall: false, publicTools: ['writeFile'] } },
    });
    expect(await call(rt, 'system.writeFile', { path: 'anon.txt', content: 'x' })).toMatchObject({ ok: false, code: 'UNAUTHORIZED' });
    expect(await call(rt, 'system.readFile', { path: 'notes.txt' })).toMatchObject({ ok: true });
    expect(await call(rt, 'system.writeFile', { path: 'anon.txt', content: 'x' }, alice)).toMatchObject({ ok: true });
  });

  it('bad input is refused by validation', async () => {
    const rt = await makeRuntime(workspaceConfig());
    expect(await call(rt, 'system.readFile', {})).toMatchObject({ ok: false, code: 'BAD_REQUEST' });
    expect(await call(rt, 'system.readFile', { path: 'a'.repeat(5000) })).toMatchObject({ ok: false, code: 'BAD_REQUEST' });
    expect(await call(rt, 'system.readFile', { path: 'notes.txt', encoding: 'hex' })).toMatchObject({ ok: false, code: 'BAD_REQUEST' });
    expect(await call(rt, 'system.writeFile', { path: 'x.txt', content: 'ø', encoding: 'base64' })).toMatchObject({
      ok: false,
      code: 'BAD_REQUEST',
    });
  });
});

describe('system client workspace procedures', () => {
  it('are scoped to the caller and never grant server file access', async () => {
    const rt = await makeRuntime(workspaceConfig());
    const reg = { id: 'proj', uri: `file://${fixture.base}`, name: 'Project' };
    expect(await call(rt, 'system.registerClientWorkspace', reg, alice)).toEqual({
      ok: true,
      data: { success: true, id: 'proj', message: "client workspace 'proj' registered" },
    });
    // The spec's array of strings (ids) by default; records with detailed: true.
    expect((await call(rt, 'system.listClientWorkspaces', undefined, alice)).data).toEqual(['proj']);
    expect((await call(rt, 'system.listClientWorkspaces', { detailed: false }, alice)).data).toEqual(['proj']);
    expect((await call(rt, 'system.listClientWorkspaces', { detailed: true }, alice)).data).toMatchObject([
      { id: 'proj', uri: `file://${fixture.base}`, name: 'Project', source: 'registered' },
    ]);
    expect((await call(rt, 'system.listClientWorkspaces', undefined, bob)).data).toEqual([]);
    expect((await call(rt, 'system.listClientWorkspaces', { detailed: true }, bob)).data).toEqual([]);
    expect(await call(rt, 'system.listClientWorkspaces', { detailed: 'yes' }, alice)).toMatchObject({ ok: false, code: 'BAD_REQUEST' });
    expect(await call(rt, 'system.unregisterClientWorkspace', { id: 'proj' }, bob)).toMatchObject({ ok: false, code: 'NOT_FOUND' });
    // A client workspace id is not a server workspace id: its folder stays unreachable.
    expect(await call(rt, 'system.readFile', { workspaceId: 'proj', path: 'secret.txt' }, alice)).toMatchObject({
      ok: false,
      code: 'NOT_FOUND',
    });
    expect(await call(rt, 'system.registerClientWorkspace', { id: 'x', uri: 'file:///a/../../etc' }, alice)).toMatchObject({
      ok: false,
      code: 'BAD_REQUEST',
    });
    expect(await call(rt, 'system.registerClientWorkspace', { id: 'x', uri: 'https://example.com/' }, alice)).toMatchObject({
      ok: false,
      code: 'BAD_REQUEST',
    });
    expect(await call(rt, 'system.unregisterClientWorkspace', { id: 'proj' }, alice)).toMatchObject({ ok: true });
  });

  it('an MCP session sees its roots and its own registrations', async () => {
    const rt = await makeRuntime({ mcp: { auth: { authType: 'none' } } });
    rt.clientWorkspaces.setSessionRoots('sess-1', [{ uri: 'file:///home/me/code', name: 'code' }]);
    const s1 = { sessionId: 'sess-1', toolName: 'listClientWorkspaces' };
    await call(rt, 'system.registerClientWorkspace', { id: 'mine', uri: 'file:///home/me/other' }, null, {
      ...s1,
      toolName: 'registerClientWorkspace',
    });
    expect((await call(rt, 'system.listClientWorkspaces', undefined, null, s1)).data).toEqual(['mine', 'root-1']);
    const listed = await call(rt, 'system.listClientWorkspaces', { detailed: true }, null, s1);
    expect(listed.data.map((w: { id: string; source: string }) => [w.id, w.source])).toEqual([
      ['mine', 'registered'],
      ['root-1', 'mcp-roots'],
    ]);
    const other = await call(rt, 'system.listClientWorkspaces', undefined, null, { sessionId: 'sess-2', toolName: 'listClientWorkspaces' });
    expect(other.data).toEqual([]);
  });
});
