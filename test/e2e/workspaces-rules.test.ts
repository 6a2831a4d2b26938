/**
 * The six workspace rules, each positive and negative, through a real server on /rpc, /trpc and
 * MCP tools/call alike; a workspace added at run time by an administrator (scope mcp:admin) is
 * usable at once on every entry point (also on MCP sessions opened before); readOnly on all
 * three; listClientWorkspaces answers the spec's array of strings.
 */
import { access, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintDevToken } from '@ai-backend/auth';
import { connectAll, ENTRY_POINTS, type EntryPoint, type EntryPointClient, type Outcome } from './helpers/entryPoints.js';
import { startTestServer, type TestServer } from './helpers/testServer.js';

const JWT_SECRET = 'workspaces-rules-secret-0123456789abcdefgh';
const DENIED = 'FORBIDDEN: access denied';

let base: string;
let root: string;
let srv: TestServer;
const user = {} as Record<EntryPoint, EntryPointClient>;
const admin = {} as Record<EntryPoint, EntryPointClient>;

const label = (o: Outcome) => (o.ok ? 'ok' : `${o.code}: ${o.message}`);
const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

beforeAll(async () => {
  base = await mkdtemp(path.join(os.tmpdir(), 'aib-rules-'));
  root = path.join(base, 'root');
  const files: Record<string, string> = {
    'README.md': '# readme',
    'NOTES.MD': 'upper-case extension',
    'small.txt': 'small',
    'big.txt': 'b'.repeat(2000),
    Makefile: 'all:',
    'x.env.txt': 'DOUBLE=1',
    '.env': 'TOKEN=inside-blocked',
    'src/app.ts': 'export {}',
    'src/.env': 'SRC_ENV=1',
    'docs/guide.md': 'the guide',
    'secrets/key.txt': 'secret key',
  };
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, rel)), { recursive: true });
    await writeFile(path.join(root, rel), content);
  }
  await writeFile(path.join(base, 'outside.md'), 'OUTSIDE');
  await mkdir(path.join(base, 'root_evil'));
  await writeFile(path.join(base, 'root_evil', 'x.md'), 'OUTSIDE-EVIL');
  await symlink('docs/guide.md', path.join(root, 'link-in.md'));
  await symlink('../outside.md', path.join(root, 'link-out.md'));
  await symlink('docs', path.join(root, 'linkdir'));
  await mkdir(path.join(base, 'added'));
  await writeFile(path.join(base, 'added', 'hello.txt'), 'from a workspace added at run time');

  srv = await startTestServer({
    jwt: { secret: JWT_SECRET },
    // One caller runs the whole corpus on every entry point: far more tool calls than the default
    // per-minute limit (rate-limit.test.ts covers it), so it is off here.
    mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: false } },
    serverWorkspaces: {
      plain: { path: root },
      ro: { path: root, readOnly: true },
      paths: { path: root, allowedPaths: ['src/**', 'docs/**', 'README.md', 'secrets/**'], blockedPaths: ['**/.env', 'secrets'] },
      ext: { path: root, allowedExtensions: ['.md', '.txt'], blockedExtensions: ['.env'] },
      size: { path: root, maxFileSize: 1000 },
      links: { path: root, followSymlinks: true },
    },
  });
  Object.assign(user, await connectAll(srv.url, await mintDevToken({ secret: JWT_SECRET, sub: 'alice', scopes: ['mcp'] })));
  Object.assign(admin, await connectAll(srv.url, await mintDevToken({ secret: JWT_SECRET, sub: 'root', scopes: ['mcp', 'mcp:admin'] })));
});

afterAll(async () => {
  for (const c of [...Object.values(user), ...Object.values(admin)]) await c.close();
  await srv?.stop();
  await rm(base, { recursive: true, force: true });
});

const read = (c: EntryPointClient, workspaceId: string, p: string, encoding = 'utf8') =>
  c.call('system.readFile', { workspaceId, path: p, encoding });
const write = (c: EntryPointClient, workspaceId: string, p: string, content: string, encoding = 'utf8') =>
  c.call('system.writeFile', { workspaceId, path: p, content, encoding });
const list = async (c: EntryPointClient, workspaceId: string) => {
  const r = await c.call('system.listFiles', { workspaceId, recursive: true });
  expect(r.ok, label(r)).toBe(true);
  return (r as { data: string[] }).data;
};

describe.each(ENTRY_POINTS)('the six rules over %s', (via) => {
  const c = () => user[via];

  it('1. paths stay inside the root (separator boundary, no prefix match)', async () => {
    expect(await read(c(), 'plain', 'docs/guide.md')).toMatchObject({
      ok: true,
      data: { content: 'the guide', size: 9, encoding: 'utf8', mimeType: 'text/markdown' },
    });
    expect(await read(c(), 'plain', './docs//guide.md')).toMatchObject({ ok: true, data: { content: 'the guide' } });
    expect(await c().call('system.pathExists', { workspaceId: 'plain', path: 'src' })).toMatchObject({ ok: true, data: { exists: true } });
    for (const p of [
      '../outside.md',
      '../root_evil/x.md',
      `${root}_evil/x.md`,
      `${root}/README.md`,
      'docs/../../outside.md',
      '%2e%2e/outside.md',
    ]) {
      expect(label(await read(c(), 'plain', p)), p).toBe(DENIED);
    }
  });

  it('2. readOnly refuses writes (and creates no folder); the writable twin accepts them', async () => {
    const rel = `out-${via}/nested/file.txt`;
    const denied = await write(c(), 'ro', rel, 'nope');
    expect(label(denied)).toBe(DENIED);
    if (via !== 'mcp') expect((denied as { details?: unknown }).details).toEqual({ reason: 'workspace is read-only' });
    expect(await exists(path.join(root, `out-${via}`))).toBe(false);
    expect(await read(c(), 'ro', 'README.md')).toMatchObject({ ok: true, data: { content: '# readme' } });
    expect(await write(c(), 'plain', rel, 'written')).toEqual(
      expect.objectContaining({ ok: true, data: { success: true, path: rel, size: 7 } }),
    );
    expect(await readFile(path.join(root, rel), 'utf8')).toBe('written');
    // Overwriting an existing file through a read-only workspace is refused too.
    expect(label(await write(c(), 'ro', rel, 'changed'))).toBe(DENIED);
    expect(await readFile(path.join(root, rel), 'utf8')).toBe('written');
  });

  it('3. allowedPaths / blockedPaths on the normalised path; blocked wins; listings hide both', async () => {
    for (const p of ['src/app.ts', 'docs/guide.md', 'README.md']) expect(label(await read(c(), 'paths', p)), p).toBe('ok');
    for (const p of ['small.txt', '.env', 'src/.env', 'SRC/.ENV', 'src/../.env', 'secrets/key.txt', 'SECRETS/key.txt', 'NOTES.MD']) {
      expect(label(await read(c(), 'paths', p)), p).toBe(DENIED);
    }
    expect(label(await write(c(), 'paths', 'src/.env', 'X=1'))).toBe(DENIED);
    // No existence oracle: a path the rules never reach is refused whether or not it exists.
    for (const p of ['small.txt', 'missing.txt', '.env', 'nothing/.env']) {
      expect(label(await c().call('system.pathExists', { workspaceId: 'paths', path: p })), p).toBe(DENIED);
    }
    expect(await c().call('system.pathExists', { workspaceId: 'paths', path: 'src/app.ts' })).toMatchObject({
      ok: true,
      data: { exists: true },
    });
    const listed = await list(c(), 'paths');
    expect(listed).toEqual(expect.arrayContaining(['README.md', 'docs/', 'docs/guide.md', 'src/', 'src/app.ts']));
    for (const hidden of ['small.txt', '.env', 'src/.env', 'secrets/', 'secrets/key.txt', 'NOTES.MD']) expect(listed).not.toContain(hidden);
  });

  it('4. allowedExtensions / blockedExtensions, case-insensitive, double extensions handled', async () => {
    for (const p of ['README.md', 'NOTES.MD', 'small.txt', 'docs/guide.md']) expect(label(await read(c(), 'ext', p)), p).toBe('ok');
    for (const p of ['src/app.ts', 'Makefile', 'x.env.txt', '.env']) expect(label(await read(c(), 'ext', p)), p).toBe(DENIED);
    // A hidden file "does not exist", exactly like a missing one (a folder of that name could be reachable).
    for (const p of ['src/app.ts', 'src/missing.ts'])
      expect(await c().call('system.pathExists', { workspaceId: 'ext', path: p }), p).toMatchObject({ ok: true, data: { exists: false } });
    expect(label(await write(c(), 'ext', `new-${via}.ts`, 'x'))).toBe(DENIED);
    expect(label(await write(c(), 'ext', `new-${via}.md`, 'x'))).toBe('ok');
    const listed = await list(c(), 'ext');
    expect(listed).toContain('NOTES.MD');
    for (const hidden of ['src/app.ts', 'Makefile', 'x.env.txt', '.env']) expect(listed).not.toContain(hidden);
  });

  it('5. maxFileSize on read and on write (decoded size for base64)', async () => {
    expect(label(await read(c(), 'size', 'small.txt'))).toBe('ok');
    const big = await read(c(), 'size', 'big.txt');
    expect(label(big)).toBe(DENIED);
    if (via !== 'mcp') expect((big as { details?: unknown }).details).toEqual({ reason: 'file too large', maxFileSize: 1000 });
    expect(label(await read(c(), 'plain', 'big.txt'))).toBe('ok');
    // 1000 bytes as base64 is 1336 characters: the decoded size counts.
    expect(await write(c(), 'size', `max-${via}.bin`, Buffer.alloc(1000, 1).toString('base64'), 'base64')).toMatchObject({
      ok: true,
      data: { size: 1000 },
    });
    expect(label(await write(c(), 'size', `over-${via}.bin`, Buffer.alloc(1001, 1).toString('base64'), 'base64'))).toBe(DENIED);
    expect(label(await write(c(), 'size', `over-${via}.txt`, 'x'.repeat(1001)))).toBe(DENIED);
    expect(await exists(path.join(root, `over-${via}.txt`))).toBe(false);
    expect(await list(c(), 'size')).not.toContain('big.txt');
  });

  it('6. symlinks only when followSymlinks is true, and never out of the root', async () => {
    for (const p of ['link-in.md', 'linkdir/guide.md']) {
      expect(label(await read(c(), 'plain', p)), p).toBe(DENIED);
      expect(await read(c(), 'links', p), p).toMatchObject({ ok: true, data: { content: 'the guide' } });
    }
    expect(label(await read(c(), 'links', 'link-out.md'))).toBe(DENIED);
    expect(await list(c(), 'plain')).not.toContain('link-in.md');
    const followed = await list(c(), 'links');
    expect(followed).toEqual(expect.arrayContaining(['link-in.md', 'linkdir/', 'linkdir/guide.md']));
    expect(followed).not.toContain('link-out.md');
  });
});

describe('workspaces added at run time', () => {
  it('an administrator adds one over /rpc: usable at once over /rpc, /trpc and an MCP session opened before', async () => {
    const input = { id: 'Added', config: { path: path.join(base, 'added'), readOnly: true } };
    expect(label(await user.rpc.call('system.addServerWorkspace', input))).toMatch(/^FORBIDDEN: /);
    expect(await admin.rpc.call('system.addServerWorkspace', input)).toMatchObject({ ok: true, data: { success: true, id: 'Added' } });
    for (const via of ENTRY_POINTS) {
      expect(await read(user[via], 'Added', 'hello.txt'), via).toMatchObject({
        ok: true,
        data: { content: 'from a workspace added at run time' },
      });
      expect(label(await write(user[via], 'Added', 'x.txt', 'x')), via).toBe(DENIED); // readOnly as configured
    }
    const seen = (await user.mcp.call('system.getServerWorkspaces')) as { data: Record<string, { source: string; path?: string }> };
    expect(seen.data.Added).toMatchObject({ source: 'runtime', accessible: true, writable: false });
    expect(seen.data.Added!.path).toBeUndefined(); // folder paths only for administrators
    expect(((await admin.mcp.call('system.getServerWorkspaces')) as { data: Record<string, { path?: string }> }).data.Added!.path).toBe(
      path.join(base, 'added'),
    );

    expect(label(await user.mcp.call('system.removeServerWorkspace', { id: 'Added' }))).toMatch(/^FORBIDDEN: /);
    expect(await admin.rpc.call('system.removeServerWorkspace', { id: 'Added' })).toMatchObject({ ok: true, data: { success: true } });
    for (const via of ENTRY_POINTS) expect(label(await read(user[via], 'Added', 'hello.txt')), via).toBe('NOT_FOUND: workspace not found');
  });

  it('an administrator adds one over MCP: usable at once over /rpc', async () => {
    const input = { id: 'viaMcp', config: { path: path.join(base, 'added') } };
    expect(label(await user.mcp.call('system.addServerWorkspace', input))).toMatch(/^FORBIDDEN: /);
    expect(await admin.mcp.call('system.addServerWorkspace', input)).toMatchObject({ ok: true, data: { success: true, id: 'viaMcp' } });
    expect(await read(user.rpc, 'viaMcp', 'hello.txt')).toMatchObject({
      ok: true,
      data: { content: 'from a workspace added at run time' },
    });
    expect(await write(user.rpc, 'viaMcp', 'made-over-rpc.txt', 'hi')).toMatchObject({ ok: true });
    expect(await readFile(path.join(base, 'added', 'made-over-rpc.txt'), 'utf8')).toBe('hi');
    expect(label(await admin.mcp.call('system.addServerWorkspace', input))).toMatch(/^CONFLICT: /);
    expect(await admin.trpc.call('system.removeServerWorkspace', { id: 'viaMcp' })).toMatchObject({ ok: true });
    expect(label(await user.mcp.call('system.readFile', { workspaceId: 'viaMcp', path: 'hello.txt' }))).toBe(
      'NOT_FOUND: workspace not found',
    );
  });
});

describe('listClientWorkspaces', () => {
  it('answers the ids (array of strings) by default and records with detailed: true, on every entry point', async () => {
    // The same identity on all three entry points shares one registry.
    expect(
      await user.rpc.call('system.registerClientWorkspace', { id: 'proj', uri: 'file:///home/alice/proj', name: 'Project' }),
    ).toMatchObject({ ok: true });
    expect(await user.trpc.call('system.registerClientWorkspace', { id: 'docs', uri: 'file:///home/alice/docs' })).toMatchObject({
      ok: true,
    });
    for (const via of ENTRY_POINTS) {
      expect(await user[via].call('system.listClientWorkspaces'), via).toMatchObject({ ok: true, data: ['docs', 'proj'] });
      const detailed = await user[via].call('system.listClientWorkspaces', { detailed: true });
      expect(detailed, via).toMatchObject({
        ok: true,
        data: [
          { id: 'docs', uri: 'file:///home/alice/docs', source: 'registered' },
          { id: 'proj', uri: 'file:///home/alice/proj', name: 'Project', source: 'registered' },
        ],
      });
    }
    // Another identity sees none of them.
    expect(await admin.mcp.call('system.listClientWorkspaces')).toMatchObject({ ok: true, data: [] });
  });
});
