import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintDevToken } from '@ai-backend/auth';
import { z } from 'zod';
import {
  accessDecision,
  createAppRouter,
  isBuiltInPath,
  KEY_SCOPES,
  loadRouter,
  procedureIndex,
  publicProcedure,
  resolveConfig,
  router,
  type Identity,
  type KeyAccess,
  type ProcedureMeta,
} from '@ai-backend/core/internal';
import { startTestServer, type TestServer } from './helpers/testServer.js';
import { RawMcp, type McpReply } from './helpers/rawMcp.js';

/**
 * What an API key may call (docs/security.md "What an API key may call"): every procedure of the
 * app router (built-in plus a custom router) × credential (a user's JWT, an administrator's JWT,
 * a key without scopes, a key with each key scope, an administrator key; OAuth access tokens
 * through the one access policy) × entry point (/trpc, /rpc, MCP tools/call, the /v1 wire
 * formats). The procedures are read from the router: a built-in procedure without a `keyAccess`
 * decision, or one missing from KEY_ACCESS below, fails the first test.
 *
 * Calls send an input that fails validation where a procedure takes one, so a call the policy lets
 * through stops there or runs a harmless read; a refusal by the key rule is told apart from the
 * administrator rule by its `details.reason`.
 */

const SECRET = 'key-access-matrix-secret-0123456789-abcdef';
const INPUT = { __matrix: 1 };
const A = 'any' as const;
const N = 'none' as const;
const S = (scope: string) => ({ scope });

/** The decision for every built-in procedure, written out (administrator procedures: 'any' plus rule 1). */
const KEY_ACCESS: Record<string, KeyAccess> = {
  ...Object.fromEntries(
    [
      'greeting',
      'ping',
      'echo',
      'currentSystemTime',
      'getResources',
      'readResource',
      'apiDocumentationPrompt',
      'codeReviewPrompt',
      'explainConceptPrompt',
      'incidentResponsePrompt',
    ].map((p) => [`mcp.${p}`, A]),
  ),
  ...Object.fromEntries(
    [
      'generateText',
      'streamText',
      'embed',
      'listProviders',
      'listProvidersBYOK',
      'listAllowedModels',
      'getRegistryHealth',
      'validateProvider',
    ].map((p) => [`ai.${p}`, A]),
  ),
  ...Object.fromEntries(
    ['health', 'test', 'getServerWorkspaces', 'listFiles', 'readFile', 'pathExists', 'listClientWorkspaces'].map((p) => [`system.${p}`, A]),
  ),
  'system.writeFile': S(KEY_SCOPES.filesWrite),
  'system.registerClientWorkspace': S(KEY_SCOPES.workspacesWrite),
  'system.unregisterClientWorkspace': S(KEY_SCOPES.workspacesWrite),
  // Credentials: never through a key (a key must not redirect its owner's calls or read their keys' state without a grant).
  ...Object.fromEntries(
    ['storeUserKey', 'rotateUserKey', 'deleteUserKey', 'storeProviderKey', 'deleteProviderKey', 'validateUserKey'].map((p) => [
      `auth.${p}`,
      N,
    ]),
  ),
  'auth.getUserKey': S(KEY_SCOPES.accountRead),
  'auth.getUserProviders': S(KEY_SCOPES.accountRead),
  ...Object.fromEntries(
    [
      'getTokenBalance',
      'getUserTokenBalances',
      'getUsageHistory',
      'getConsumptionHistory',
      'getUsageAnalytics',
      'planConsumption',
      'getBudget',
    ].map((p) => [`billing.${p}`, A]),
  ),
  'billing.getPurchaseHistory': S(KEY_SCOPES.accountRead),
  'billing.getTopupHistory': S(KEY_SCOPES.accountRead),
  'user.checkRequestEligibility': A,
  'user.configureBYOK': N,
  'user.updateUserPreferences': N,
  'user.getBYOKStatus': S(KEY_SCOPES.accountRead),
  'user.getUserProfile': S(KEY_SCOPES.accountRead),
  'user.getUserStatus': S(KEY_SCOPES.accountRead),
  'keys.list': A,
  'keys.get': A,
  // The MCP gateway: the key's tools rule applies to the upstream tool named in the input (docs/mcp-gateway.md).
  ...Object.fromEntries(['listServers', 'listTools', 'callTool'].map((p) => [`gateway.${p}`, A])),
  // Each user's upstream credentials change the account: never through a key.
  ...Object.fromEntries(['setCredentials', 'deleteCredentials', 'connect'].map((p) => [`gateway.${p}`, N])),
  ...Object.fromEntries(['create', 'update', 'revoke', 'rotate'].map((p) => [`keys.${p}`, N])),
};

/** A custom router: the default for a procedure that does not say, for one that writes, and both explicit forms. */
const weather = router({
  forecast: publicProcedure
    .meta({ description: 'Forecast', mcp: {} })
    .input(z.object({ city: z.string() }))
    .query(({ input }) => input.city),
  save: publicProcedure
    .meta({ description: 'Save', writes: true, mcp: { name: 'saveForecast' } })
    .input(z.object({ city: z.string() }))
    .mutation(() => true),
  station: publicProcedure
    .meta({ description: 'Add a station', keyAccess: { scope: 'weather:write' }, mcp: { name: 'addStation' } })
    .input(z.object({ id: z.string() }))
    .mutation(() => true),
  settings: publicProcedure
    .meta({ description: 'Account settings', keyAccess: 'none' })
    .input(z.object({ units: z.string() }))
    .mutation(() => true),
  // Resources served by procedures: a key lists and reads them only as its rules let it call them.
  history: publicProcedure
    .meta({
      description: 'Saved forecasts',
      keyAccess: { scope: 'weather:write' },
      mcp: { tool: false, resource: { uri: 'weather://history', mimeType: 'application/json' } },
    })
    .query(() => ({ days: 3 })),
  stationInfo: publicProcedure
    .meta({
      description: 'A station',
      keyAccess: { scope: 'weather:write' },
      mcp: { tool: false, resource: { uriTemplate: 'weather://stations/{id}' } },
    })
    .input(z.object({ id: z.string() }))
    .query(({ input }) => input.id),
});
const CUSTOM: Record<string, KeyAccess> = {
  'weather.forecast': A,
  'weather.save': N,
  'weather.station': S('weather:write'),
  'weather.settings': N,
  'weather.history': S('weather:write'),
  'weather.stationInfo': S('weather:write'),
};

const appRouter = createAppRouter({ weather });
await loadRouter(appRouter);
interface Proc {
  path: string;
  type: 'query' | 'mutation';
  meta: ProcedureMeta | undefined;
}
const PROCEDURES: Proc[] = [...procedureIndex(appRouter).values()]
  .filter((i) => i.type !== 'subscription')
  .map((i) => ({ path: i.path, type: i.type as Proc['type'], meta: i.meta }));
const isTool = (p: Proc) => p.meta?.mcp !== undefined && p.meta.mcp.tool !== false;
const toolName = (p: Proc) => p.meta?.mcp?.name ?? p.path.split('.').pop()!;

type Who = 'jwtUser' | 'jwtAdmin' | 'key' | `key+${string}` | 'adminKey';
const SCOPED = [...Object.values(KEY_SCOPES), 'weather:write'];
const WHO: Who[] = ['jwtUser', 'jwtAdmin', 'key', ...SCOPED.map((s) => `key+${s}` as Who), 'adminKey'];
type Outcome = 'PASSED' | 'FORBIDDEN' | 'KEY_REFUSED';

/** The table: what each credential gets for each procedure. */
function expected(p: Proc, who: Who): Outcome {
  const admin = p.meta?.access === 'admin';
  if (who === 'jwtUser') return admin ? 'FORBIDDEN' : 'PASSED';
  if (who === 'jwtAdmin') return 'PASSED';
  const access = KEY_ACCESS[p.path] ?? CUSTOM[p.path] ?? (admin ? A : undefined);
  const scopes = who === 'adminKey' ? ['mcp:admin'] : who.startsWith('key+') ? [who.slice(4)] : [];
  if (access === N) return 'KEY_REFUSED';
  if (typeof access === 'object' && !scopes.includes(access.scope)) return 'KEY_REFUSED';
  if (admin) return who === 'adminKey' ? 'PASSED' : 'FORBIDDEN';
  return 'PASSED';
}

/** The tool names an MCP client's tools/list answers. */
async function toolNames(client: RawMcp): Promise<string[]> {
  const tools = ((await client.send('tools/list', {})).message?.result?.tools ?? []) as Array<{ name: string }>;
  return tools.map((t) => t.name);
}

function classify(err: { appCode?: unknown; details?: { reason?: unknown } } | undefined): Outcome {
  if (err?.appCode !== 'FORBIDDEN') return 'PASSED';
  return typeof err.details?.reason === 'string' && err.details.reason.startsWith('key_') ? 'KEY_REFUSED' : 'FORBIDDEN';
}

describe('key access decisions', () => {
  it('every built-in procedure states whether a key may call it, exactly as the table says', () => {
    const builtIn = PROCEDURES.filter((p) => isBuiltInPath(p.path));
    expect(builtIn.length).toBeGreaterThan(70);
    const undecided = builtIn.filter((p) => p.meta?.keyAccess === undefined).map((p) => p.path);
    expect(undecided, 'built-in procedures without meta.keyAccess').toEqual([]);
    const listed = builtIn.filter((p) => p.meta?.access !== 'admin').map((p) => p.path);
    expect(Object.keys(KEY_ACCESS).sort(), 'KEY_ACCESS names every non-administrator built-in procedure').toEqual(listed.sort());
    for (const p of builtIn) expect(p.meta?.keyAccess, p.path).toEqual(KEY_ACCESS[p.path] ?? A);
  });

  it('OAuth and JWT identities are not governed by the key rule; the policy refuses keys alike (the function every entry point asks)', () => {
    const config = resolveConfig({ jwt: { secret: SECRET }, admin: { users: ['root'] } });
    const oauth: Identity = { sub: 'alice', scopes: ['mcp', 'mcp:call'], isAdmin: false, via: 'oauth', clientId: 'c' };
    const jwt: Identity = { sub: 'alice', scopes: [], isAdmin: false, via: 'jwt' };
    const key: Identity = { sub: 'alice', scopes: [], isAdmin: false, via: 'apiKey', apiKey: { id: 'k' } };
    for (const p of PROCEDURES) {
      const admin = p.meta?.access === 'admin';
      for (const who of [oauth, jwt]) expect(accessDecision(config, p.path, p.meta, who).allowed, `${who.via} ${p.path}`).toBe(!admin);
      const d = accessDecision(config, p.path, p.meta, key);
      expect(d.allowed ? 'PASSED' : classify({ appCode: d.code, details: d.details }), `key ${p.path}`).toBe(expected(p, 'key'));
    }
  });
});

describe('key access on every entry point', () => {
  let s: TestServer;
  const creds = {} as Record<Who, string>;

  async function rpcAs(token: string, method: string, params: unknown): Promise<any> {
    const res = await s.fetch('/rpc', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    return res.json();
  }

  beforeAll(async () => {
    s = await startTestServer({
      jwt: { secret: SECRET },
      admin: { users: ['root'] },
      customRouters: { weather },
      limits: { maxBatchSize: 200 },
      mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: false } },
    });
    creds.jwtUser = await mintDevToken({ secret: SECRET, sub: 'alice', scopes: ['mcp'] });
    creds.jwtAdmin = await mintDevToken({ secret: SECRET, sub: 'root', scopes: ['mcp'] });
    const make = async (token: string, scopes: string[]) => {
      const r = await rpcAs(token, 'keys.create', { name: `k${scopes.join('-')}`, scopes });
      if (!r.result) throw new Error(JSON.stringify(r));
      return r.result.key as string;
    };
    creds.key = await make(creds.jwtUser, []);
    for (const scope of SCOPED) creds[`key+${scope}`] = await make(creds.jwtUser, [scope]);
    creds.adminKey = await make(creds.jwtAdmin, ['mcp:admin']);
  });
  afterAll(() => s?.stop());

  async function viaRpc(who: Who): Promise<Map<string, Outcome>> {
    const batch = PROCEDURES.map((p, i) => ({ jsonrpc: '2.0', id: i, method: p.path, params: INPUT }));
    const res = await s.fetch('/rpc', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${creds[who]}` },
      body: JSON.stringify(batch),
    });
    const replies = (await res.json()) as Array<{ id: number; error?: { data: { appCode?: string; details?: { reason?: string } } } }>;
    return new Map(PROCEDURES.map((p, i) => [p.path, classify(replies.find((r) => r.id === i)!.error?.data)]));
  }

  async function viaTrpc(who: Who): Promise<Map<string, Outcome>> {
    const out = new Map<string, Outcome>();
    const auth = { authorization: `Bearer ${creds[who]}` };
    for (const type of ['query', 'mutation'] as const) {
      const procs = PROCEDURES.filter((p) => p.type === type);
      const input = JSON.stringify(Object.fromEntries(procs.map((_, i) => [i, { json: INPUT }])));
      const url = `/trpc/${procs.map((p) => p.path).join(',')}?batch=1`;
      const res =
        type === 'query'
          ? await s.fetch(`${url}&input=${encodeURIComponent(input)}`, { headers: auth })
          : await s.fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...auth }, body: input });
      const items = (await res.json()) as Array<{ error?: { json: { data: { appCode?: string; details?: { reason?: string } } } } }>;
      procs.forEach((p, i) => out.set(p.path, classify(items[i]!.error?.json.data)));
    }
    return out;
  }

  async function viaMcp(who: Who): Promise<Map<string, Outcome>> {
    const client = new RawMcp(s.url, creds[who]);
    expect((await client.initialize()).status).toBe(200);
    const out = new Map<string, Outcome>();
    // tools/list offers a key only what its rules let it call (a refusal other than the key
    // rule's, an administrator tool for a user, is the call's to give, as for a signed-in user).
    const listed = new Set(await toolNames(client));
    for (const p of PROCEDURES.filter(isTool))
      expect(listed.has(toolName(p)), `tools/list ${p.path}`).toBe(expected(p, who) !== 'KEY_REFUSED');
    // resources/list and resources/templates/list likewise, and a read is decided as its procedure's call.
    const resources = new Set(
      (((await client.send('resources/list', {})).message?.result?.resources ?? []) as Array<{ uri: string }>).map((r) => r.uri),
    );
    const templates = new Set(
      (
        ((await client.send('resources/templates/list', {})).message?.result?.resourceTemplates ?? []) as Array<{ uriTemplate: string }>
      ).map((t) => t.uriTemplate),
    );
    for (const p of PROCEDURES) {
      const r = p.meta?.mcp?.resource;
      if (!r) continue;
      const uri = 'uri' in r && r.uri !== undefined ? r.uri : undefined;
      const shown = uri !== undefined ? resources.has(uri) : templates.has((r as { uriTemplate: string }).uriTemplate);
      expect(shown, `resources listed: ${p.path}`).toBe(expected(p, who) !== 'KEY_REFUSED');
      const read = await client.send('resources/read', { uri: uri ?? 'weather://stations/oslo' });
      // A resource the key may not read is answered as one that does not exist (-32602), so a key
      // cannot tell it is there (test/e2e/api-keys-resources.test.ts).
      const error = read.message?.error;
      out.set(p.path, error?.code === -32602 && error.data?.uri !== undefined ? 'KEY_REFUSED' : classify(error?.data));
    }
    for (const p of PROCEDURES.filter(isTool)) {
      const reply: McpReply = await client.callTool(toolName(p), INPUT);
      expect(reply.status, p.path).toBe(200);
      const m = reply.message!;
      out.set(p.path, classify(m.error ? m.error.data : m.result?.isError ? m.result._meta?.['ai-backend/error'] : undefined));
    }
    return out;
  }

  /** /v1: each request reaches one ai procedure; a refusal is a 403 naming the key rule. */
  async function viaV1(who: Who): Promise<Map<string, Outcome>> {
    const out = new Map<string, Outcome>();
    const calls: Array<[string, string, unknown]> = [
      ['ai.generateText', '/v1/chat/completions', { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }],
      ['ai.embed', '/v1/embeddings', { model: 'openai/text-embedding-3-small', input: 'hi' }],
    ];
    for (const [path, url, body] of calls) {
      const res = await s.fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${creds[who]}` },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      out.set(path, res.status === 403 ? (/API key/.test(text) ? 'KEY_REFUSED' : 'FORBIDDEN') : 'PASSED');
    }
    return out;
  }

  it.each(WHO)("%s: every entry point gives the table's outcome for every procedure", async (who) => {
    const observed: Array<[string, Map<string, Outcome>]> = [
      ['/rpc', await viaRpc(who)],
      ['/trpc', await viaTrpc(who)],
      ['mcp tools/call', await viaMcp(who)],
      ['/v1', await viaV1(who)],
    ];
    const mismatches: string[] = [];
    for (const p of PROCEDURES) {
      const want = expected(p, who);
      for (const [entry, outcomes] of observed) {
        const got = outcomes.get(p.path);
        if (got !== undefined && got !== want) mismatches.push(`${entry} ${p.path}: got ${got}, want ${want}`);
      }
    }
    expect(mismatches).toEqual([]);
    expect(observed[0]![1].size).toBe(PROCEDURES.length);
    expect(observed[1]![1].size).toBe(PROCEDURES.length);
  });

  it("a key's tools rule narrows what it may call, by procedure path or MCP tool name, on every entry point", async () => {
    const made = await rpcAs(creds.jwtUser, 'keys.create', { name: 'tools', tools: ['ai.*', 'forecast'], scopes: [KEY_SCOPES.filesWrite] });
    const key = made.result.key as string;
    const outcome = async (method: string, params: unknown) => {
      const r = await rpcAs(key, method, params);
      return r.error?.data?.details?.reason ?? 'PASSED';
    };
    expect(await outcome('ai.listProviders', {})).toBe('PASSED');
    expect(await outcome('weather.forecast', INPUT)).toBe('PASSED');
    expect(await outcome('mcp.ping', {})).toBe('key_tool_not_allowed');
    expect(await outcome('billing.getTokenBalance', undefined)).toBe('key_tool_not_allowed');
    // It never widens: a scope the key holds does not reach a procedure outside its tools.
    expect(await outcome('system.writeFile', INPUT)).toBe('key_tool_not_allowed');
    expect(await outcome('user.configureBYOK', INPUT)).toBe('key_not_allowed');
    const mcp = new RawMcp(s.url, key);
    expect((await mcp.initialize()).status).toBe(200);
    const ping = await mcp.callTool('ping', {});
    expect(ping.message?.result?._meta?.['ai-backend/error']).toMatchObject({
      appCode: 'FORBIDDEN',
      details: { reason: 'key_tool_not_allowed' },
    });
    // /v1/messages/count_tokens is decided as the call it counts for (ai.generateText).
    const count = async (k: string) =>
      (
        await s.fetch('/v1/messages/count_tokens', {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${k}` },
          body: JSON.stringify({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'hi' }] }),
        })
      ).status;
    expect(await count(key)).toBe(200);
    const forecastOnly = (await rpcAs(creds.jwtUser, 'keys.create', { name: 'forecast-only', tools: ['forecast'] })).result.key as string;
    expect(await count(forecastOnly)).toBe(403);
    // prompts/list likewise: the built-in prompts are mcp.* procedures, outside this key's tools rule.
    const promptsOf = async (client: RawMcp) =>
      (((await client.send('prompts/list', {})).message?.result?.prompts ?? []) as Array<{ name: string }>).map((p) => p.name);
    const owner = new RawMcp(s.url, creds.jwtUser);
    expect((await owner.initialize()).status).toBe(200);
    expect((await promptsOf(owner)).length).toBeGreaterThan(0);
    expect(await promptsOf(mcp)).toEqual([]);
    const plain = new RawMcp(s.url, creds.key);
    expect((await plain.initialize()).status).toBe(200);
    expect((await promptsOf(plain)).sort()).toEqual((await promptsOf(owner)).sort());
    // completion/complete likewise: a prompt the key may not get is unknown to it (-32602), not completed.
    const explain = (await promptsOf(owner)).find((n) => /explain/i.test(n))!;
    const complete = (client: RawMcp) =>
      client.send('completion/complete', { ref: { type: 'ref/prompt', name: explain }, argument: { name: 'level', value: 'be' } });
    expect((await complete(owner)).message?.result?.completion?.values).toEqual(['beginner']);
    expect((await complete(plain)).message?.result?.completion?.values).toEqual(['beginner']);
    expect((await complete(mcp)).message?.error).toMatchObject({ code: -32602 });
    const listed = await toolNames(mcp);
    expect(listed).toContain('forecast');
    expect(listed).toContain('generateText');
    expect(listed).not.toContain('ping');
    expect(listed).not.toContain('writeFile');
    const forecast = await mcp.callTool('forecast', { city: 'Oslo' });
    expect(forecast.message?.result?.isError ?? false).toBe(false);
  });

  it("the attack: a narrow key cannot rewrite its owner's account", async () => {
    const narrow = (
      await rpcAs(creds.jwtUser, 'keys.create', { name: 'narrow', models: ['gpt-4.1-mini'], budget: { total: { tokens: 100 } } })
    ).result.key as string;
    const attempts: Array<[string, unknown]> = [
      ['user.configureBYOK', { enabled: true, providers: ['openai'], apiKeys: { openai: 'sk-attacker-0123456789abcdef' } }],
      ['user.updateUserPreferences', { consumptionOrder: ['byok', 'platform'] }],
      ['auth.storeUserKey', { email: 'alice', provider: 'openai', apiKey: 'sk-attacker-0123456789abcdef' }],
      ['auth.deleteUserKey', { email: 'alice', provider: 'openai' }],
      ['keys.create', { name: 'wider' }],
    ];
    for (const [method, params] of attempts) {
      const r = await rpcAs(narrow, method, params);
      expect(r.error?.data, method).toMatchObject({ appCode: 'FORBIDDEN', details: { reason: 'key_not_allowed' } });
    }
    // Nothing changed: the owner has no stored key.
    const status = await rpcAs(creds.jwtUser, 'user.getBYOKStatus', {});
    expect(JSON.stringify(status.result)).not.toContain('attacker');
    expect((await rpcAs(creds.jwtUser, 'auth.getUserProviders', { email: 'alice' })).result.providers).toEqual([]);
  });
});
