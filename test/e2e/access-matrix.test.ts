// @every-node: CI runs this file on every Node version it tests (docs/testing.md, "CI: phases and times").
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintDevToken } from '@ai-backend/auth';
import { z } from 'zod';
import {
  adminProcedure,
  createAppRouter,
  loadRouter,
  procedureIndex,
  protectedProcedure,
  publicProcedure,
  router,
  type ConfigInput,
  type ProcedureMeta,
} from '@ai-backend/core/internal';
import { describeMatrix } from './helpers/describeMatrix.js';
import { serverFor, startTestServer, type TestServer } from './helpers/testServer.js';
import { RawMcp, type McpReply } from './helpers/rawMcp.js';

/**
 * The access matrix: every procedure (built-in and a custom router) × entry point (/trpc,
 * /typedrpc, /rpc, MCP tools/call, prompts/get, resources/read; the /v1 wire formats for the
 * procedures they call) × identity (anonymous, user,
 * user without the required scope, administrator) × authType × tool rules. The expected
 * outcome is the table of docs/security.md, written out below in `expected()`; every entry
 * point must produce exactly it, so the same procedure is governed identically everywhere.
 *
 * Calls send an input that fails validation (`{ __matrix: 1 }` for procedures with required
 * fields), so a call the policy lets through stops at validation or runs a harmless read:
 * nothing is written, and "let through" (PASSED) is told apart from an access refusal by the
 * error's appCode.
 */

const SECRET = 'access-matrix-secret-0123456789-abcdef';
const REQUIRED_SCOPE = 'mcp';

const AUTH_TYPES = ['none', 'jwt', 'both', 'oauth'] as const;
type AuthType = (typeof AUTH_TYPES)[number];
/** Plus two refused credentials: HS256 signed with another secret, and an ES256 access token from a foreign key. */
const IDENTITIES = ['anonymous', 'user', 'noscope', 'admin', 'invalid', 'foreign'] as const;
type Who = (typeof IDENTITIES)[number];
type Outcome = 'PASSED' | 'UNAUTHORIZED' | 'FORBIDDEN' | 'INVALID_TOKEN' | 'INSUFFICIENT_SCOPE';
const REFUSALS = new Set<string>(['UNAUTHORIZED', 'FORBIDDEN', 'INVALID_TOKEN', 'INSUFFICIENT_SCOPE']);
const classify = (appCode: unknown): Outcome => (typeof appCode === 'string' && REFUSALS.has(appCode) ? (appCode as Outcome) : 'PASSED');

const INPUT = { __matrix: 1 };

/** A custom router with one procedure of each kind the policy distinguishes. */
const weather = router({
  forecast: publicProcedure
    .meta({ description: 'Forecast for a city', mcp: {} })
    .input(z.object({ city: z.string() }))
    .query(({ input }) => ({ city: input.city, sky: 'clear' })),
  save: publicProcedure
    .meta({ description: 'Save a forecast', writes: true, mcp: { name: 'saveForecast' } })
    .input(z.object({ city: z.string() }))
    .mutation(() => ({ saved: true })),
  history: protectedProcedure
    .meta({
      description: 'Your forecast history',
      mcp: { tool: false, resource: { uri: 'weather://history', mimeType: 'application/json' } },
    })
    .query(({ ctx }) => ({ sub: ctx.identity.sub, days: [] })),
  station: publicProcedure
    .meta({ description: 'A weather station', mcp: { tool: false, resource: { uriTemplate: 'weather://stations/{id}' } } })
    .input(z.object({ id: z.string() }))
    .query(({ input }) => `station ${input.id}`),
  brief: publicProcedure
    .meta({ description: 'Weather briefing prompt', mcp: { tool: false, prompt: { name: 'weatherBrief' } } })
    .input(z.object({ city: z.string().optional() }))
    .query(({ input }) => `Brief me on ${input.city ?? 'the weather'}`),
  internal: publicProcedure
    .meta({ description: 'Not on MCP' })
    .input(z.object({ n: z.number() }))
    .query(({ input }) => input.n),
  adminOnly: adminProcedure
    .meta({ description: 'Administrators', mcp: { name: 'weatherAdmin' } })
    .input(z.object({ n: z.number() }))
    .query(({ input }) => input.n),
});

interface Proc {
  path: string;
  type: 'query' | 'mutation';
  meta: ProcedureMeta | undefined;
}
const matrixRouter = createAppRouter({ weather });
await loadRouter(matrixRouter);
const PROCEDURES: Proc[] = [...procedureIndex(matrixRouter).values()]
  .filter((i) => i.type !== 'subscription')
  .map((i) => ({ path: i.path, type: i.type as Proc['type'], meta: i.meta }));
const onMcp = (p: Proc) => p.meta?.mcp !== undefined;
const toolName = (p: Proc) => p.meta?.mcp?.name ?? p.path.split('.').pop()!;
const isTool = (p: Proc) => onMcp(p) && p.meta?.mcp?.tool !== false;
const promptName = (p: Proc) => {
  const prompt = p.meta?.mcp?.prompt;
  return prompt ? ((prompt === true ? undefined : prompt.name) ?? toolName(p)) : undefined;
};
const resourceUri = (p: Proc) => {
  const r = p.meta?.mcp?.resource;
  return r ? (r.uri ?? r.uriTemplate!.replace(/\{(\w+)\}/g, 'x1')) : undefined;
};

interface Cell {
  authType: AuthType;
  toolsCall: boolean;
  publicTools: string[];
  /** authEnforcement { enabled: true, requireAuth: false }: the MCP tool rules lifted. */
  enforcementOff?: boolean;
}
const CELLS: Cell[] = [
  ...AUTH_TYPES.flatMap((authType) =>
    [true, false].flatMap((toolsCall) => [[], ['forecast', 'greeting']].map((publicTools) => ({ authType, toolsCall, publicTools }))),
  ),
  { authType: 'jwt', toolsCall: true, publicTools: [], enforcementOff: true },
];

// ---- The table (docs/security.md "Access table"), written out ---------------------------

function expected(cell: Cell, p: Proc, who: Who): Outcome {
  // A presented credential is verified first, whatever the procedure. authType 'oauth' accepts
  // only our authorization server's access tokens: the HS256 test tokens are refused there.
  if (who === 'invalid' || who === 'foreign') return 'INVALID_TOKEN';
  if (who !== 'anonymous' && cell.authType === 'oauth') return 'INVALID_TOKEN';
  if (who === 'noscope') return 'INSUFFICIENT_SCOPE';
  const signedIn = who !== 'anonymous';
  if (p.meta?.access === 'admin') return !signedIn ? 'UNAUTHORIZED' : who === 'admin' ? 'PASSED' : 'FORBIDDEN';
  if (signedIn) return 'PASSED';
  if (p.meta?.access === 'user') return 'UNAUTHORIZED';
  if (cell.authType === 'none') return 'PASSED';
  if (p.meta?.writes) return 'UNAUTHORIZED';
  const publicTool = p.meta?.mcp?.public === true || cell.publicTools.includes(toolName(p));
  if (onMcp(p) && cell.toolsCall && !cell.enforcementOff && !publicTool) return 'UNAUTHORIZED';
  return 'PASSED';
}

// ---- Credentials ----------------------------------------------------------------------------

const tokens = {} as Record<Exclude<Who, 'anonymous'>, string>;
beforeAll(async () => {
  tokens.user = await mintDevToken({ secret: SECRET, sub: 'alice', email: 'alice@example.com', scopes: [REQUIRED_SCOPE] });
  tokens.admin = await mintDevToken({ secret: SECRET, sub: 'root', scopes: [REQUIRED_SCOPE, 'mcp:admin'] });
  tokens.noscope = await mintDevToken({ secret: SECRET, sub: 'bob', scopes: ['other'] });
  tokens.invalid = await mintDevToken({ secret: 'some-other-secret-0123456789-abcdefgh', sub: 'mallory', scopes: [REQUIRED_SCOPE] });
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
const authHeader = (who: Who): Record<string, string> => (who === 'anonymous' ? {} : { authorization: `Bearer ${tokens[who]}` });

/** A configured authorization server; its identity provider is never contacted in these tests. */
const OAUTH: NonNullable<ConfigInput>['oauth'] = {
  encryptionKey: 'access-matrix-encryption-key-0123456789',
  providerClientId: 'client-at-idp',
  providerClientSecret: 'idp-secret',
  provider: {
    authorizationUrl: 'http://127.0.0.1:9/authorize',
    tokenUrl: 'http://127.0.0.1:9/token',
    userinfoUrl: 'http://127.0.0.1:9/userinfo',
  },
};

const configFor = (cell: Cell): ConfigInput => ({
  jwt: { secret: SECRET },
  ...(cell.authType === 'oauth' || cell.authType === 'both' ? { oauth: OAUTH } : {}),
  customRouters: { weather },
  limits: { maxBatchSize: 200 },
  mcp: {
    auth: {
      authType: cell.authType,
      requireAuthForToolsCall: cell.toolsCall,
      publicTools: cell.publicTools,
      jwt: { requiredScopes: [REQUIRED_SCOPE] },
    },
    ...(cell.enforcementOff ? { authEnforcement: { enabled: true, requireAuth: false } } : {}),
    // One caller calls every procedure on every entry point, several times: far more tool calls
    // in a minute than the default limit (rate-limit.test.ts covers the limits themselves).
    rateLimiting: { enabled: false },
  },
});

// ---- Entry points: each returns the outcome per procedure path ------------------------------

type Call = (path: string, init?: RequestInit) => Promise<Response>;

/** /trpc or /typedrpc: one GET batch for the queries, one POST batch for the mutations. */
async function viaTrpc(call: Call, prefix: string, who: Who): Promise<Map<string, Outcome>> {
  const out = new Map<string, Outcome>();
  for (const type of ['query', 'mutation'] as const) {
    const procs = PROCEDURES.filter((p) => p.type === type);
    const input = JSON.stringify(Object.fromEntries(procs.map((_, i) => [i, { json: INPUT }])));
    const url = `${prefix}/${procs.map((p) => p.path).join(',')}?batch=1`;
    const res =
      type === 'query'
        ? await call(`${url}&input=${encodeURIComponent(input)}`, { headers: authHeader(who) })
        : await call(url, { method: 'POST', headers: { 'content-type': 'application/json', ...authHeader(who) }, body: input });
    const items = (await res.json()) as Array<{ error?: { json: { data: { appCode?: string } } } }>;
    expect(items).toHaveLength(procs.length);
    procs.forEach((p, i) => out.set(p.path, classify(items[i]!.error?.json.data.appCode)));
  }
  return out;
}

/** /rpc: one JSON-RPC batch. */
async function viaRpc(call: Call, who: Who): Promise<Map<string, Outcome>> {
  const batch = PROCEDURES.map((p, i) => ({ jsonrpc: '2.0', id: i, method: p.path, params: INPUT }));
  const res = await call('/rpc', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...authHeader(who) },
    body: JSON.stringify(batch),
  });
  expect(res.status).toBe(200);
  const replies = (await res.json()) as Array<{ id: number; error?: { data: { appCode?: string } } }>;
  return new Map(PROCEDURES.map((p, i) => [p.path, classify(replies.find((r) => r.id === i)!.error?.data.appCode)]));
}

/**
 * An MCP answer: the HTTP challenge, a tool result's structured error, or a JSON-RPC error. With
 * authentication configured, an anonymous refusal must be the HTTP 401 challenge (clients only
 * start OAuth on it): the same refusal as a tool or JSON-RPC error counts as a mismatch.
 */
function mcpOutcome(reply: McpReply, challengeExpected = false): Outcome | 'UNAUTHORIZED without the HTTP challenge' {
  if (reply.status === 401 || reply.status === 403) {
    const challenge = reply.headers.get('www-authenticate') ?? '';
    expect(challenge).toMatch(/^Bearer .*resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/mcp"/);
    if (challenge.includes('error="insufficient_scope"')) return 'INSUFFICIENT_SCOPE';
    return challenge.includes('error="invalid_token"') ? 'INVALID_TOKEN' : 'UNAUTHORIZED';
  }
  expect(reply.status).toBe(200);
  const m = reply.message!;
  const outcome = m.error
    ? classify(m.error.data?.appCode)
    : m.result?.isError
      ? classify(m.result._meta?.['ai-backend/error']?.appCode)
      : 'PASSED';
  return outcome === 'UNAUTHORIZED' && challengeExpected ? 'UNAUTHORIZED without the HTTP challenge' : outcome;
}

/** MCP over the given fetch: tools/call, prompts/get and resources/read of every procedure published so. */
async function viaMcp(call: Call, who: Who, authType: AuthType): Promise<Map<string, Map<string, string>>> {
  const challenge = who === 'anonymous' && authType !== 'none';
  const client = new RawMcp('', who === 'anonymous' ? undefined : tokens[who], call);
  // A refused credential is refused at initialize, and before any session is looked at.
  const init = await client.initialize();
  if (who === 'anonymous') expect(init.status).toBe(200);
  const out = new Map<string, Map<string, string>>([
    ['mcp tools/call', new Map()],
    ['mcp prompts/get', new Map()],
    ['mcp resources/read', new Map()],
  ]);
  for (const p of PROCEDURES) {
    if (isTool(p)) out.get('mcp tools/call')!.set(p.path, mcpOutcome(await client.callTool(toolName(p), INPUT), challenge));
    const prompt = promptName(p);
    if (prompt)
      out.get('mcp prompts/get')!.set(p.path, mcpOutcome(await client.send('prompts/get', { name: prompt, arguments: {} }), challenge));
    const uri = resourceUri(p);
    if (uri) out.get('mcp resources/read')!.set(p.path, mcpOutcome(await client.send('resources/read', { uri }), challenge));
  }
  return out;
}

/**
 * The /v1 wire formats: each request goes to one procedure, and is refused (or let through) as
 * that procedure is. A refusal is the HTTP 401/403 with its Bearer challenge, as on MCP; anything
 * else (an upstream or payment error, a model list) means the policy let the call through.
 */
const V1: Array<{ entry: string; path: string; method: 'GET' | 'POST'; body?: unknown }> = [
  {
    entry: 'POST /v1/chat/completions',
    path: 'ai.generateText',
    method: 'POST',
    body: { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
  },
  {
    entry: 'POST /v1/chat/completions stream',
    path: 'ai.streamText',
    method: 'POST',
    body: { model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] },
  },
  {
    entry: 'POST /v1/messages',
    path: 'ai.generateText',
    method: 'POST',
    body: { model: 'anthropic/claude-3-5-haiku-latest', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
  },
  { entry: 'POST /v1/responses', path: 'ai.generateText', method: 'POST', body: { model: 'openai/gpt-4o-mini', input: 'hi' } },
  { entry: 'POST /v1/embeddings', path: 'ai.embed', method: 'POST', body: { model: 'openai/text-embedding-3-small', input: 'hi' } },
  { entry: 'GET /v1/models', path: 'ai.listAllowedModels', method: 'GET' },
];

async function viaV1(call: Call, who: Who): Promise<Array<[string, Map<string, Outcome>]>> {
  const out: Array<[string, Map<string, Outcome>]> = [];
  for (const v of V1) {
    const url = v.entry.startsWith('GET') ? '/v1/models' : v.entry.split(' ')[1]!;
    const res = await call(url, {
      method: v.method,
      headers: { 'content-type': 'application/json', ...authHeader(who) },
      ...(v.body ? { body: JSON.stringify(v.body) } : {}),
    });
    const text = await res.text();
    let outcome: Outcome = 'PASSED';
    if (res.status === 401 || res.status === 403) {
      const challenge = res.headers.get('www-authenticate') ?? '';
      expect(challenge, `${v.entry} ${res.status}`).toMatch(/^Bearer .*resource_metadata="/);
      if (challenge.includes('error="invalid_token"')) outcome = 'INVALID_TOKEN';
      else if (challenge.includes('error="insufficient_scope"')) outcome = 'INSUFFICIENT_SCOPE';
      else if (res.status === 403) outcome = 'FORBIDDEN';
      // A metered call the policy let through but nobody pays for asks an anonymous caller to
      // sign in with the same 401 (wireFormatHandler); only the policy's says "authentication required".
      else if (/authentication required/.test(text)) outcome = 'UNAUTHORIZED';
    }
    out.push([v.entry, new Map([[v.path, outcome]])]);
  }
  return out;
}

const cellLabel = (c: Cell) =>
  `authType=${c.authType} toolsCall=${c.toolsCall} publicTools=[${c.publicTools}]${c.enforcementOff ? ' authEnforcement.requireAuth=false' : ''}`;

it('the matrix covers every kind of procedure and every MCP surface', () => {
  expect(PROCEDURES.length).toBeGreaterThan(50);
  expect(PROCEDURES.some((p) => p.meta?.writes && p.path.startsWith('system.'))).toBe(true);
  expect(PROCEDURES.filter((p) => promptName(p)).length).toBeGreaterThan(1);
  expect(PROCEDURES.filter((p) => resourceUri(p)).map((p) => p.path)).toEqual(['weather.history', 'weather.station']);
});

for (const cell of CELLS) {
  // Every cell in-process and against a listening server (describeMatrix's default modes).
  describeMatrix(cellLabel(cell), (mode) => {
    let s: Awaited<ReturnType<typeof serverFor>>;
    beforeAll(async () => {
      s = await serverFor(mode, configFor(cell));
    });
    afterAll(() => s?.stop());

    it.each(IDENTITIES)('%s: every entry point gives the documented outcome for every procedure', async (who) => {
      const observed = new Map<string, Map<string, string>>([
        ['/trpc', await viaTrpc(s.call, '/trpc', who)],
        ['/typedrpc', await viaTrpc(s.call, '/typedrpc', who)],
        ['/rpc', await viaRpc(s.call, who)],
        ...(await viaMcp(s.call, who, cell.authType)),
        ...(await viaV1(s.call, who)),
      ]);
      const mismatches: string[] = [];
      for (const p of PROCEDURES) {
        const want = expected(cell, p, who);
        for (const [entry, outcomes] of observed) {
          const got = outcomes.get(p.path);
          if (got !== undefined && got !== want) mismatches.push(`${entry} ${p.path}: got ${got}, want ${want}`);
        }
      }
      expect(mismatches, cellLabel(cell)).toEqual([]);
      // Every procedure was reached on /trpc, /typedrpc and /rpc; MCP surfaces saw theirs.
      for (const entry of ['/trpc', '/typedrpc', '/rpc']) expect(observed.get(entry)!.size).toBe(PROCEDURES.length);
      expect(observed.get('mcp tools/call')!.size).toBe(PROCEDURES.filter(isTool).length);
      expect(observed.get('mcp prompts/get')!.size).toBe(PROCEDURES.filter((p) => promptName(p)).length);
      expect(observed.get('mcp resources/read')!.size).toBe(2);
      for (const v of V1) expect(observed.get(v.entry)!.size, v.entry).toBe(1);
    });
  });
}

describe('anonymous writes behind authentication', () => {
  it.each(['jwt', 'both', 'oauth'] as const)(
    'authType %s: no anonymous write on any entry point, whatever the tool rules',
    async (authType) => {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'anon-write-'));
      const s = await serverFor('listening', {
        ...configFor({ authType, toolsCall: false, publicTools: ['writeFile', 'registerClientWorkspace'] }),
        serverWorkspaces: { ws: { path: dir, name: 'ws', readOnly: false } },
      });
      try {
        const input = { workspaceId: 'ws', path: 'pwned.txt', content: 'x' };
        const trpc = await s.call('/trpc/system.writeFile', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ json: input }),
        });
        expect(trpc.status).toBe(401);
        const typed = await s.call('/typedrpc/system.writeFile', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ json: input }),
        });
        expect(typed.status).toBe(401);
        const rpc = (await (
          await s.call('/rpc', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'system.writeFile', params: input }),
          })
        ).json()) as any;
        expect(rpc.error.data.appCode).toBe('UNAUTHORIZED');
        const mcp = new RawMcp('', undefined, s.call);
        expect((await mcp.initialize()).status).toBe(200);
        expect(mcpOutcome(await mcp.callTool('writeFile', input), true)).toBe('UNAUTHORIZED');
        expect(mcpOutcome(await mcp.callTool('registerClientWorkspace', { id: 'c', uri: 'file:///tmp' }), true)).toBe('UNAUTHORIZED');
        await expect(stat(path.join(dir, 'pwned.txt'))).rejects.toThrow();
        // A signed-in user writes.
        const ok = await s.call('/rpc', {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${authType === 'oauth' ? '' : tokens.user}` },
          body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'system.writeFile', params: input }),
        });
        if (authType !== 'oauth') {
          expect(((await ok.json()) as any).result.success).toBe(true);
          expect(await readFile(path.join(dir, 'pwned.txt'), 'utf8')).toBe('x');
        } else await ok.text();
      } finally {
        await s.stop();
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
});

// ---- Challenges and the security log --------------------------------------------------------

const otherTokens = {} as { valid: string; invalid: string };
beforeAll(async () => {
  otherTokens.valid = tokens.user;
  otherTokens.invalid = await mintDevToken({ secret: 'some-other-secret-0123456789-abcdefgh', sub: 'mallory', scopes: [REQUIRED_SCOPE] });
});

function expectChallenge(reply: McpReply, status: 401 | 403, error?: string) {
  expect(reply.status).toBe(status);
  const challenge = reply.headers.get('www-authenticate') ?? '';
  expect(challenge).toMatch(/^Bearer /);
  expect(challenge).toMatch(/resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp"/);
  if (error) expect(challenge).toContain(`error="${error}"`);
  else expect(challenge).not.toContain('error=');
}

function expectToolText(reply: McpReply, pattern: RegExp) {
  expect(reply.status).toBe(200);
  expect(reply.message?.error).toBeUndefined();
  expect(reply.message?.result?.isError).toBeFalsy();
  expect(reply.message?.result?.content?.[0]?.text).toMatch(pattern);
}

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
      anon.token = otherTokens.invalid;
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
    const bad = { authorization: `Bearer ${otherTokens.invalid}` };
    const mcp = new RawMcp(s.url, otherTokens.invalid);
    expect((await mcp.initialize()).status).toBe(401);
    // A tRPC batch of three calls with one bad token: one event for the request.
    const batch = await s.fetch(`/trpc/mcp.ping,mcp.ping,mcp.ping?batch=1&input=${encodeURIComponent('{}')}`, { headers: bad });
    expect(batch.status).toBe(401);
    await (
      await s.fetch('/rpc', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...bad },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'mcp.ping' }),
      })
    ).text();
    await (
      await s.fetch('/rpc', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${otherTokens.valid}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'admin.status', params: {} }),
      })
    ).text();
    const denied = await s.fetch('/rpc', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${otherTokens.valid}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'system.readFile', params: { workspaceId: 'ws', path: '../secret.txt' } }),
    });
    expect(((await denied.json()) as any).error.data.appCode).toBe('ACCESS_DENIED');
    const anon = new RawMcp(s.url);
    await anon.initialize();
    expect((await anon.callTool('echo', { message: 'x' })).status).toBe(401);

    await s.stop(); // flushes the file
    expect((await stat(logFile)).mode & 0o777).toBe(0o600);
    const text = await readFile(logFile, 'utf8');
    for (const t of [...Object.values(tokens), ...Object.values(otherTokens)]) {
      expect(text).not.toContain(t);
      expect(text).not.toContain(t.split('.')[2]!);
    }
    const events = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const failures = events.filter((e) => e.type === 'auth_failed');
    expect(failures.map((e) => e.transport).sort()).toEqual(['mcp', 'rpc', 'trpc']);
    expect(failures.every((e) => e.reason === 'INVALID_TOKEN' && e.message === 'invalid signature' && e.ip === '127.0.0.1')).toBe(true);
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'forbidden', reason: 'FORBIDDEN', transport: 'rpc', sub: 'alice', path: 'admin.status' }),
    );
    expect(events).toContainEqual(
      expect.objectContaining({
        type: 'access_denied',
        reason: 'ACCESS_DENIED',
        transport: 'rpc',
        sub: 'alice',
        path: 'system.readFile',
        workspaceId: 'ws',
        requestedPath: '../secret.txt',
      }),
    );
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'auth_required', reason: 'UNAUTHORIZED', transport: 'mcp', status: 401 }),
    );
  });
});
