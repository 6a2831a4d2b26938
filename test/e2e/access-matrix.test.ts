import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintDevToken } from '@ai-backend/auth';
import type { ConfigInput } from '@ai-backend/core';
import { startTestServer, type TestServer } from './helpers/testServer.js';
import { RawMcp, type McpReply } from './helpers/rawMcp.js';

/**
 * The MCP access rules and procedure-level access on all three entry points.
 * The matrix is generated, the expectations are written out as rules below (`expected*`),
 * and every cell checks concrete status codes, challenges and error codes.
 */

const SECRET = 'access-matrix-secret-0123456789-abcdef';
const REQUIRED_SCOPE = 'mcp';

const AUTH_TYPES = ['none', 'jwt', 'both', 'oauth'] as const;
const PUBLIC_TOOLS = [[], ['greeting']] as const;
/**
 * HS256 tokens signed with `jwt.secret` (valid, admin, noscope), one signed with another secret
 * (invalid), and an ES256 access token from a key pair minted here (foreign): shaped like our OAuth
 * access tokens, but not signed with the server's key.
 */
const CREDENTIALS = ['none', 'valid', 'admin', 'invalid', 'noscope', 'foreign'] as const;
type AuthType = (typeof AUTH_TYPES)[number];
type Credential = (typeof CREDENTIALS)[number];

interface Cell {
  authType: AuthType;
  toolsList: boolean;
  toolsCall: boolean;
  publicTools: readonly string[];
}

const CELLS: Cell[] = AUTH_TYPES.flatMap((authType) =>
  [false, true].flatMap((toolsList) =>
    [false, true].flatMap((toolsCall) => PUBLIC_TOOLS.map((publicTools) => ({ authType, toolsList, toolsCall, publicTools }))),
  ),
);

const tokens = {} as Record<Exclude<Credential, 'none'>, string>;
beforeAll(async () => {
  tokens.valid = await mintDevToken({ secret: SECRET, sub: 'alice', email: 'alice@example.com', scopes: [REQUIRED_SCOPE] });
  tokens.admin = await mintDevToken({ secret: SECRET, sub: 'root', scopes: [REQUIRED_SCOPE, 'mcp:admin'] });
  tokens.invalid = await mintDevToken({ secret: 'some-other-secret-0123456789-abcdefgh', sub: 'mallory', scopes: [REQUIRED_SCOPE] });
  tokens.noscope = await mintDevToken({ secret: SECRET, sub: 'bob', scopes: ['other'] });
  tokens.foreign = foreignAccessToken();
});

/** An ES256 `at+jwt` signed with a key the server has never seen. */
function foreignAccessToken(): string {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const b64 = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const input = `${b64({ alg: 'ES256', typ: 'at+jwt', kid: 'foreign-key' })}.${b64({ iss: 'http://127.0.0.1', aud: 'http://127.0.0.1/mcp', sub: 'eve', sid: 'x', client_id: 'c', scope: 'mcp mcp:admin', iat: now, exp: now + 600 })}`;
  return `${input}.${sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}
const tokenOf = (cred: Credential) => (cred === 'none' ? undefined : tokens[cred]);

/** A configured authorization server; its identity provider is never contacted in these tests. */
const OAUTH: NonNullable<ConfigInput>['oauth'] = {
  encryptionKey: 'access-matrix-encryption-key-0123456789',
  providerClientId: 'client-at-idp',
  providerClientSecret: 'idp-secret',
  provider: { authorizationUrl: 'http://127.0.0.1:9/authorize', tokenUrl: 'http://127.0.0.1:9/token', userinfoUrl: 'http://127.0.0.1:9/userinfo' },
};

const configFor = (cell: Cell): ConfigInput => ({
  jwt: { secret: SECRET },
  ...(cell.authType === 'oauth' || cell.authType === 'both' ? { oauth: OAUTH } : {}),
  mcp: {
    auth: {
      authType: cell.authType,
      requireAuthForToolsList: cell.toolsList,
      requireAuthForToolsCall: cell.toolsCall,
      publicTools: [...cell.publicTools],
      jwt: { requiredScopes: [REQUIRED_SCOPE] },
    },
  },
});

// ---- The rules, written out -------------------------------------------------------------

/**
 * What a refused credential gets on /mcp whatever the request (presented ⇒ verified). authType
 * 'oauth' accepts only our own OAuth access tokens: HS256 tokens are refused there.
 */
function credentialRefusal(cell: Cell, cred: Credential): { status: 401 | 403; error: string } | null {
  if (cred === 'none') return null;
  if (cred === 'invalid' || cred === 'foreign' || cell.authType === 'oauth') return { status: 401, error: 'invalid_token' };
  if (cred === 'noscope') return { status: 403, error: 'insufficient_scope' };
  return null;
}

/** Rules 1–3 for an anonymous caller; 'none' switches them off. `test` is public by its metadata. */
function anonymousNeedsAuth(cell: Cell, what: 'tools/list' | string): boolean {
  if (cell.authType === 'none') return false;
  if (what === 'tools/list') return cell.toolsList;
  if (what === 'test') return false;
  // An administrator tool needs an identity whatever the tool rules say: anonymous callers get
  // the challenge that starts sign-in.
  if (what === 'addServerWorkspace') return true;
  return cell.toolsCall && !cell.publicTools.includes(what);
}

/** Outcome of the admin-only tool (addServerWorkspace with an invalid id) when the call gets through. */
const adminToolOutcome = (cred: Credential) => (cred === 'admin' ? 'BAD_REQUEST' : cred === 'valid' ? 'FORBIDDEN' : 'UNAUTHORIZED');

/** /trpc and /rpc: the MCP rules do not apply there; procedure kinds and credentials do. */
function procedureOutcome(cell: Cell, cred: Credential, kind: 'public' | 'protected' | 'admin'): 'OK' | 'UNAUTHORIZED' | 'FORBIDDEN' {
  const refusal = credentialRefusal(cell, cred);
  if (refusal) return refusal.status === 401 ? 'UNAUTHORIZED' : 'FORBIDDEN';
  if (kind === 'public') return 'OK';
  if (cred === 'none') return 'UNAUTHORIZED';
  if (kind === 'admin' && cred !== 'admin') return 'FORBIDDEN';
  return 'OK';
}
const HTTP_STATUS = { OK: 200, UNAUTHORIZED: 401, FORBIDDEN: 403 } as const;
const JSONRPC_CODE = { UNAUTHORIZED: -32001, FORBIDDEN: -32003 } as const;

// ---- Checks ------------------------------------------------------------------------------

function expectChallenge(reply: McpReply, status: 401 | 403, error?: string) {
  expect(reply.status).toBe(status);
  const challenge = reply.headers.get('www-authenticate') ?? '';
  expect(challenge).toMatch(/^Bearer /);
  expect(challenge).toMatch(/resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp"/);
  if (error) expect(challenge).toContain(`error="${error}"`);
  else expect(challenge).not.toContain('error=');
  if (error === 'insufficient_scope') expect(challenge).toContain(`scope="${REQUIRED_SCOPE}"`);
}

function expectToolText(reply: McpReply, pattern: RegExp) {
  expect(reply.status).toBe(200);
  expect(reply.message?.error).toBeUndefined();
  expect(reply.message?.result?.isError).toBeFalsy();
  expect(reply.message?.result?.content?.[0]?.text).toMatch(pattern);
}

const TOOL_CALLS = [
  { name: 'greeting', args: { name: 'Ada' }, text: /Hello, Ada!/ },
  { name: 'echo', args: { message: 'ping-echo' }, text: /ping-echo/ },
  { name: 'test', args: { message: 'ping-test' }, text: /ping-test/ },
] as const;

const PROCEDURES = [
  { path: 'mcp.greeting', input: { name: 'Ada' }, kind: 'public' },
  { path: 'billing.getTokenBalance', input: {}, kind: 'protected' },
  { path: 'admin.status', input: {}, kind: 'admin' },
] as const;

const label = (c: Cell) => `authType=${c.authType} toolsList=${c.toolsList} toolsCall=${c.toolsCall} publicTools=[${c.publicTools.join(',')}]`;

describe.each(CELLS)('$authType list=$toolsList call=$toolsCall public=$publicTools', (cell) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(configFor(cell));
  });
  afterAll(() => s?.stop());

  describe.each(CREDENTIALS)('credential %s', (cred) => {
    it('/mcp', async () => {
      const client = new RawMcp(s.url, tokenOf(cred));
      const refusal = credentialRefusal(cell, cred);
      if (refusal) {
        // Refused at initialize, and on an existing session: never silently ignored.
        expectChallenge(await client.initialize(), refusal.status, refusal.error);
        const anonymous = new RawMcp(s.url);
        expect((await anonymous.initialize()).status).toBe(200);
        anonymous.token = tokenOf(cred);
        expectChallenge(await anonymous.listTools(), refusal.status, refusal.error);
        expectChallenge(await anonymous.callTool('test', { message: 'x' }), refusal.status, refusal.error);
        return;
      }

      expect((await client.initialize()).status, label(cell)).toBe(200);
      const anonymous = cred === 'none';

      const list = await client.listTools();
      if (anonymous && anonymousNeedsAuth(cell, 'tools/list')) expectChallenge(list, 401);
      else {
        expect(list.status).toBe(200);
        expect(list.message?.result?.tools.map((t: { name: string }) => t.name)).toEqual(expect.arrayContaining(['greeting', 'echo', 'test', 'addServerWorkspace']));
      }

      for (const call of TOOL_CALLS) {
        const reply = await client.callTool(call.name, call.args);
        if (anonymous && anonymousNeedsAuth(cell, call.name)) expectChallenge(reply, 401);
        else expectToolText(reply, call.text);
      }

      // Administrator-only tool: an administrator in every mode, authType 'none' included.
      const admin = await client.callTool('addServerWorkspace', { id: '!!not an id' });
      if (anonymous && anonymousNeedsAuth(cell, 'addServerWorkspace')) expectChallenge(admin, 401);
      else {
        expect(admin.status).toBe(200);
        expect(admin.message?.result?.isError).toBe(true);
        expect(admin.message?.result?.content[0].text).toMatch(new RegExp(`^${adminToolOutcome(cred)}:`));
      }
    });

    it('/trpc', async () => {
      for (const p of PROCEDURES) {
        const headers: Record<string, string> = tokenOf(cred) ? { authorization: `Bearer ${tokenOf(cred)}` } : {};
        const res = await s.fetch(`/trpc/${p.path}?input=${encodeURIComponent(JSON.stringify({ json: p.input }))}`, { headers });
        const body = (await res.json()) as any;
        const want = procedureOutcome(cell, cred, p.kind);
        expect(res.status, `${p.path} as ${cred}`).toBe(HTTP_STATUS[want]);
        if (want === 'OK') expect(body.result.data.json).toBeDefined();
        else expect(body.error.json.data.code).toBe(want);
      }
    });

    it('/rpc', async () => {
      const headers: Record<string, string> = { 'content-type': 'application/json', ...(tokenOf(cred) ? { authorization: `Bearer ${tokenOf(cred)}` } : {}) };
      const batch = PROCEDURES.map((p, i) => ({ jsonrpc: '2.0', id: i, method: p.path, params: p.input }));
      const res = await s.fetch('/rpc', { method: 'POST', headers, body: JSON.stringify(batch) });
      expect(res.status).toBe(200);
      const replies = (await res.json()) as Array<{ id: number; result?: unknown; error?: { code: number; data: { code: string } } }>;
      for (const [i, p] of PROCEDURES.entries()) {
        const reply = replies.find((r) => r.id === i)!;
        const want = procedureOutcome(cell, cred, p.kind);
        if (want === 'OK') expect(reply.result, `${p.path} as ${cred}`).toBeDefined();
        else {
          expect(reply.error?.code, `${p.path} as ${cred}`).toBe(JSONRPC_CODE[want]);
          expect(reply.error?.data.code).toBe(want);
        }
      }
    });
  });
});

describe('mcp.authEnforcement', () => {
  it('requireAuth false lifts the MCP rules but keeps verification and the administrator check', async () => {
    const s = await startTestServer({
      jwt: { secret: SECRET },
      mcp: {
        auth: { authType: 'jwt', requireAuthForToolsList: true, requireAuthForToolsCall: true, jwt: { requiredScopes: [REQUIRED_SCOPE] } },
        authEnforcement: { enabled: true, requireAuth: false },
      },
    });
    try {
      const anon = new RawMcp(s.url);
      expect((await anon.initialize()).status).toBe(200);
      expect((await anon.listTools()).status).toBe(200);
      expectToolText(await anon.callTool('echo', { message: 'open' }), /open/);
      // The administrator check stays: anonymous gets the sign-in challenge.
      expectChallenge(await anon.callTool('addServerWorkspace', { id: '!!' }), 401);
      anon.token = tokens.invalid;
      expectChallenge(await anon.listTools(), 401, 'invalid_token');
    } finally {
      await s.stop();
    }
  });

  it('enabled false keeps the mcp.auth rules as configured', async () => {
    const s = await startTestServer({
      jwt: { secret: SECRET },
      mcp: { auth: { authType: 'jwt', requireAuthForToolsList: true }, authEnforcement: { enabled: false, requireAuth: false } },
    });
    try {
      const anon = new RawMcp(s.url);
      await anon.initialize();
      expectChallenge(await anon.listTools(), 401);
    } finally {
      await s.stop();
    }
  });
});

describe('security log', () => {
  let dir: string;
  let s: TestServer;
  let logFile: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'access-seclog-'));
    logFile = path.join(dir, 'logs', 'security.log');
    await mkdir(path.join(dir, 'ws'));
    await writeFile(path.join(dir, 'ws', 'a.txt'), 'hello');
    await writeFile(path.join(dir, 'secret.txt'), 'outside the workspace');
    s = await startTestServer({
      jwt: { secret: SECRET },
      serverWorkspaces: { ws: { path: path.join(dir, 'ws'), name: 'ws' } },
      mcp: {
        auth: { authType: 'jwt', jwt: { requiredScopes: [REQUIRED_SCOPE] } },
        securityLogging: { enabled: true, logLevel: 'info', logToFile: true, logFilePath: logFile },
      },
    });
  });
  afterAll(async () => {
    await s?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('records refusals on every entry point as JSON lines, without the token, in a 0600 file', async () => {
    const bad = { authorization: `Bearer ${tokens.invalid}` };
    const mcp = new RawMcp(s.url, tokens.invalid);
    expect((await mcp.initialize()).status).toBe(401);
    // A tRPC batch of three calls with one bad token: one event for the request.
    const batch = await s.fetch(`/trpc/mcp.ping,mcp.ping,mcp.ping?batch=1&input=${encodeURIComponent('{}')}`, { headers: bad });
    expect(batch.status).toBe(401);
    await (await s.fetch('/rpc', { method: 'POST', headers: { 'content-type': 'application/json', ...bad }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'mcp.ping' }) })).text();
    await (await s.fetch('/rpc', { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${tokens.valid}` }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'admin.status', params: {} }) })).text();
    const denied = await s.fetch('/rpc', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${tokens.valid}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'system.readFile', params: { workspaceId: 'ws', path: '../secret.txt' } }),
    });
    expect(((await denied.json()) as any).error.data.appCode).toBe('ACCESS_DENIED');
    const anon = new RawMcp(s.url);
    await anon.initialize();
    expect((await anon.callTool('echo', { message: 'x' })).status).toBe(401);

    await s.stop(); // flushes the file
    expect((await stat(logFile)).mode & 0o777).toBe(0o600);
    const text = await readFile(logFile, 'utf8');
    for (const t of Object.values(tokens)) {
      expect(text).not.toContain(t);
      expect(text).not.toContain(t.split('.')[2]!);
    }
    const events = text.trim().split('\n').map((l) => JSON.parse(l));
    const failures = events.filter((e) => e.type === 'auth_failed');
    expect(failures.map((e) => e.transport).sort()).toEqual(['mcp', 'rpc', 'trpc']);
    expect(failures.every((e) => e.reason === 'INVALID_TOKEN' && e.message === 'invalid signature' && e.ip === '127.0.0.1')).toBe(true);
    expect(events).toContainEqual(expect.objectContaining({ type: 'forbidden', reason: 'FORBIDDEN', transport: 'rpc', sub: 'alice', path: 'admin.status' }));
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'access_denied', reason: 'ACCESS_DENIED', transport: 'rpc', sub: 'alice', path: 'system.readFile', workspaceId: 'ws', requestedPath: '../secret.txt' }),
    );
    expect(events).toContainEqual(expect.objectContaining({ type: 'auth_required', reason: 'UNAUTHORIZED', transport: 'mcp', status: 401 }));
  });
});
