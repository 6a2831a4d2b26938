/**
 * The traversal corpus (issue 3) through a real server on all three entry points: /rpc (fetch),
 * /trpc (@trpc/client + superjson) and MCP tools/call (official SDK client). Every hostile path
 * is refused or harmless for readFile (utf8 and base64), writeFile, pathExists and listFiles;
 * no answer carries the secret planted outside the root (next to the root and in the
 * sibling-prefix folder `<root>_evil`); the whole fixture is byte-for-byte unchanged afterwards.
 */
import { lstat, readdir, readFile, readlink, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintDevToken } from '@ai-backend/auth';
import { isUnicodeText } from '@ai-backend/core/internal';
import {
  TRAVERSAL_CORPUS,
  TRAVERSAL_SECRET,
  createTraversalFixture,
  expandCorpus,
  type TraversalFixture,
  type TraversalVector,
} from '@ai-backend/test-utils';
import { connectAll, ENTRY_POINTS, type EntryPoint, type EntryPointClient, type Outcome } from './helpers/entryPoints.js';
import { startTestServer, type TestServer } from './helpers/testServer.js';

const JWT_SECRET = 'workspaces-traversal-secret-0123456789abcdef';
// Secrets inside the root that the rules hide (.env, private/**, *.key) must not leak either.
const FORBIDDEN_TEXT = [
  TRAVERSAL_SECRET,
  Buffer.from(TRAVERSAL_SECRET).toString('base64'),
  'INSIDE_BLOCKED',
  'private key',
  'private data',
];

/** Everything under `dir`: path → file content (base64) and mtime, link target, or folder mtime. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    const st = await lstat(p);
    if (e.isSymbolicLink()) out[p] = `link:${await readlink(p)}`;
    else if (e.isDirectory()) Object.assign(out, { [p]: `dir:${st.mtimeMs}` }, await snapshot(p));
    else out[p] = `file:${st.mtimeMs}:${(await readFile(p)).toString('base64')}`;
  }
  return out;
}

let fixture: TraversalFixture;
let vectors: TraversalVector[];
let srv: TestServer;
let before: Record<string, string>;
const clients = {} as Record<EntryPoint, EntryPointClient>;
const anonymous = {} as Record<EntryPoint, EntryPointClient>;

beforeAll(async () => {
  fixture = await createTraversalFixture();
  vectors = expandCorpus(fixture);
  srv = await startTestServer({
    jwt: { secret: JWT_SECRET },
    // One caller runs the whole corpus on every entry point: far more tool calls than the default
    // per-minute limit (rate-limit.test.ts covers it), so it is off here.
    mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: false } },
    // The same root twice: links refused outright, and links followed (but never out of the root).
    serverWorkspaces: { default: fixture.config({ followSymlinks: false }), follow: fixture.config({ followSymlinks: true }) },
  });
  const token = await mintDevToken({ secret: JWT_SECRET, sub: 'alice', scopes: ['mcp'] });
  Object.assign(clients, await connectAll(srv.url, token));
  Object.assign(anonymous, await connectAll(srv.url));
  before = await snapshot(fixture.base);
});

afterAll(async () => {
  for (const c of [...Object.values(clients), ...Object.values(anonymous)]) await c.close();
  await srv?.stop();
  if (fixture) await rm(fixture.base, { recursive: true, force: true });
});

const label = (o: Outcome) => (o.ok ? 'ok' : `${o.code}: ${o.message}`);

it('the corpus is the shared one with at least 60 hostile paths', () => {
  expect(TRAVERSAL_CORPUS.length).toBeGreaterThanOrEqual(60);
  expect(vectors.filter((v) => v.path.includes(fixture.root)).length).toBeGreaterThan(0); // {ROOT} expanded
});

it.each(ENTRY_POINTS)(
  '%s: a path that is not Unicode text (a lone surrogate) is refused at the edge, before any procedure',
  async (via) => {
    const notText = vectors.filter((v) => !isUnicodeText(v.path));
    expect(notText.length).toBeGreaterThan(0);
    for (const v of notText) {
      for (const workspaceId of ['default', 'follow']) {
        let o: { ok: boolean; raw: string };
        try {
          o = await clients[via].call('system.writeFile', { workspaceId, path: v.path, content: 'pwned' });
        } catch (err) {
          // The MCP client raises the transport's 400 (-32700) rather than answering it as a tool result.
          o = { ok: false, raw: String(err) };
        }
        expect(o.ok, `${via} ${workspaceId} ${v.why}`).toBe(false);
        expect(o.raw, `${via} ${workspaceId} ${v.why}`).toMatch(/unpaired surrogate/);
      }
    }
  },
);

describe.each([
  ['default', false],
  ['follow', true],
] as const)('workspace %s (followSymlinks %s)', (workspaceId, _followSymlinks) => {
  it.each(ENTRY_POINTS)('%s: every hostile path refused or harmless, nothing leaked', async (via) => {
    const client = clients[via];
    let refusals = 0;
    for (const v of vectors) {
      // A path that is not Unicode text never reaches a procedure (the edge refuses its JSON: below).
      if (!isUnicodeText(v.path)) continue;
      const at = { workspaceId, path: v.path };
      const results = {
        read: await client.call('system.readFile', { ...at, encoding: 'utf8' }),
        read64: await client.call('system.readFile', { ...at, encoding: 'base64' }),
        write: await client.call('system.writeFile', { ...at, content: `pwned ${TRAVERSAL_SECRET.length}` }),
        exists: await client.call('system.pathExists', at),
        list: await client.call('system.listFiles', { ...at, recursive: true }),
      };
      const where = `${via} ${workspaceId} ${JSON.stringify(v.path)} (${v.why})`;
      for (const [op, o] of Object.entries(results)) {
        for (const text of FORBIDDEN_TEXT) expect(o.raw, `${where} ${op} leaked`).not.toContain(text);
        // File system messages (absolute paths) never reach callers.
        if (!v.path.includes(fixture.base)) expect(o.raw, `${where} ${op} shows a server path`).not.toContain(fixture.base);
      }
      // Writes are refused everywhere: access denied (never created, never written through a link).
      expect(label(results.write), where).toBe('FORBIDDEN: access denied');
      for (const op of ['read', 'read64', 'list'] as const) {
        const o = results[op];
        // Lexical vectors: denied before the disk is touched. Links: denied, or (a dangling
        // link followed) simply not there.
        const allowed = v.lexical ? ['FORBIDDEN: access denied'] : ['FORBIDDEN: access denied', 'NOT_FOUND: not found'];
        expect(allowed, `${where} ${op}: ${label(o)}`).toContain(label(o));
      }
      const exists = results.exists;
      if (exists.ok) expect(exists.data, where).toMatchObject({ exists: false });
      else expect(label(exists), where).toBe('FORBIDDEN: access denied');
      if (v.lexical) expect(label(exists), where).toBe('FORBIDDEN: access denied');
      refusals++;
    }
    expect(refusals).toBe(TRAVERSAL_CORPUS.filter((v) => isUnicodeText(v.path)).length);
    // The same client reaches what it may: refusals above are the rules, not a broken setup.
    expect(await client.call('system.readFile', { workspaceId, path: 'notes.txt' })).toMatchObject({
      ok: true,
      data: { content: 'inside notes' },
    });
    expect(await client.call('system.listFiles', { workspaceId, recursive: true })).toMatchObject({
      ok: true,
      data: ['notes.txt', 'sub/'],
    });
  });
});

describe('adding a workspace needs an administrator', () => {
  it.each(ENTRY_POINTS)('%s: anonymous and non-admin callers cannot add a workspace over the outside folder', async (via) => {
    // The reference implementation let anyone add a workspace over /rpc.
    const input = { id: `evil-${via}`, config: { path: fixture.base } };
    if (via === 'mcp') {
      // authType jwt: an anonymous tools/call is refused at the HTTP layer (401), before any tool runs.
      await expect(anonymous.mcp.call('system.addServerWorkspace', input)).rejects.toThrow(/authentication required/);
    } else {
      expect(label(await anonymous[via].call('system.addServerWorkspace', input))).toBe('UNAUTHORIZED: authentication required');
      expect(label(await anonymous[via].call('system.removeServerWorkspace', { id: 'default' }))).toBe(
        'UNAUTHORIZED: authentication required',
      );
    }
    expect(label(await clients[via].call('system.addServerWorkspace', input))).toMatch(/^FORBIDDEN: /);
    expect(label(await clients[via].call('system.removeServerWorkspace', { id: 'default' }))).toMatch(/^FORBIDDEN: /);
    const read = await clients[via].call('system.readFile', { workspaceId: `evil-${via}`, path: 'secret.txt' });
    expect(label(read)).toBe('NOT_FOUND: workspace not found');
    const listed = await clients[via].call('system.getServerWorkspaces');
    expect(Object.keys((listed as { data: object }).data).sort()).toEqual(['default', 'follow']);
  });
});

it('nothing anywhere in the fixture was created, changed or removed', async () => {
  expect(await snapshot(fixture.base)).toEqual(before);
  for (const f of fixture.outsideFiles) expect(await readFile(f, 'utf8')).toBe(TRAVERSAL_SECRET);
});
