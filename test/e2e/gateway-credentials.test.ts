import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  createLogger,
  resolveConfig,
  UpstreamCredentials,
  type ConfigInput,
  type Runtime,
  runtimeOfServices,
} from '@ai-backend/core/internal';
import { mintDevToken } from '@ai-backend/auth';
import { createServer, type AiBackendServer } from '@ai-backend/transports';
import {
  authorizeAtUpstream,
  startApiKeyMcp,
  startOAuthMcp,
  startUpstreamAuthServer,
  type UpstreamAuthServer,
  type UpstreamMcp,
} from './helpers/oauthUpstream.js';
import { trpcClient } from './helpers/aiGateway.js';

/**
 * Per-user credentials for upstream MCP servers (issue 39, docs/mcp-gateway.md "Per-user
 * credentials and OAuth"), end to end with real parts on 127.0.0.1: our server; an MCP server
 * built with the v2 SDK that takes only access tokens of its own authorization server
 * (oidc-provider: dynamic registration, PKCE, resource indicators, rotating refresh tokens,
 * introspection); an MCP server that knows its users by an API key header. The user's part at the
 * authorization server (sign-in, consent) is played over HTTP with a cookie jar. Whatever
 * UpstreamCredentials.resolve gives is sent to the upstream with a real MCP client.
 */
const JWT_SECRET = 'e2e-gateway-creds-jwt-secret-0123456789abcdef';
const VAULT_KEY = 'e2e-gateway-creds-vault-master-key-0123456789';
const ACCESS_TTL_SEC = 4;
const KEYS = { alice: 'ak-alice-SECRETHEADER-7c1f0e9d2b4a', bob: 'ak-bob-SECRETHEADER-3e8d5a6c1f20' };

let as: UpstreamAuthServer;
let oauthMcp: UpstreamMcp;
let keyMcp: UpstreamMcp;
let server: AiBackendServer;
let runtime: Runtime;
let base = '';
let dataDir = '';
const logs: string[] = [];
/** Every answer body our server gave in this file. */
const answers: string[] = [];
/** Every upstream access token resolve handed out. */
const accessTokens: string[] = [];

const token = (sub: string) => mintDevToken({ secret: JWT_SECRET, sub, email: `${sub}@example.com`, scopes: ['mcp'] });

async function rpc(sub: string, method: string, params: unknown) {
  const res = await fetch(`${base}/rpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${await token(sub)}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const text = await res.text();
  answers.push(text);
  return JSON.parse(text) as { result?: any; error?: { code: number; message: string; data?: { appCode?: string } } };
}

/** Call `whoami` on an upstream with exactly the headers resolve gave. */
async function whoami(url: string, headers: Record<string, string>): Promise<string> {
  const client = new Client({ name: 'creds-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  try {
    const r = await client.callTool({ name: 'whoami', arguments: {} });
    return (r.content as Array<{ text: string }>)[0]!.text;
  } finally {
    await client.close();
  }
}

async function resolved(userId: string, name: 'secure' | 'keyed') {
  const r = await runtime.upstreamCredentials.resolve({ server: { name, url: name === 'secure' ? oauthMcp.url : keyMcp.url }, userId });
  if (r.kind === 'headers' && r.headers.authorization) accessTokens.push(r.headers.authorization.slice('Bearer '.length));
  return r;
}

/** gateway.connect as `sub`, sign in at the upstream's server as `login`, land on our callback. */
async function connectAs(sub: string, login: string) {
  const c = await rpc(sub, 'gateway.connect', { server: 'secure' });
  expect(c.error).toBeUndefined();
  const callback = await authorizeAtUpstream(c.result.authorizationUrl, login, `${base}/gateway/oauth/callback`);
  const page = await fetch(callback);
  const html = await page.text();
  answers.push(html);
  return { authorizationUrl: c.result.authorizationUrl as string, callback, status: page.status, html };
}

beforeAll(async () => {
  as = await startUpstreamAuthServer({ resource: () => oauthMcp.url, accessTokenTtlSec: ACCESS_TTL_SEC });
  oauthMcp = await startOAuthMcp(() => as);
  keyMcp = await startApiKeyMcp({ [KEYS.alice]: 'alice', [KEYS.bob]: 'bob' });
  dataDir = await mkdtemp(join(tmpdir(), 'gw-creds-'));
  const config: ConfigInput = {
    port: 0,
    host: '127.0.0.1',
    mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: false } },
    jwt: { secret: JWT_SECRET },
    billing: { vaultKey: VAULT_KEY },
    storage: { type: 'file', dir: dataDir },
    // Servers added at run time below may be on 127.0.0.1 too.
    gateway: { allowPrivateNetwork: true },
    mcpServers: {
      secure: { type: 'http', url: oauthMcp.url, perUser: true, allowPrivateNetwork: true },
      keyed: { type: 'http', url: keyMcp.url, perUser: true, allowPrivateNetwork: true },
      shared: { type: 'http', url: keyMcp.url, headers: { 'x-api-key': KEYS.alice }, allowPrivateNetwork: true },
    },
  };
  server = createServer(config, { logger: createLogger('debug', (l) => logs.push(l)) });
  const bound = await server.start();
  base = bound.url.replace(/\/$/, '');
  runtime = runtimeOfServices(await server.ready());
}, 30_000);

afterAll(async () => {
  await server?.stop();
  await Promise.all([oauthMcp?.close(), keyMcp?.close(), as?.close()]);
  await rm(dataDir, { recursive: true, force: true });
});

describe('static per-user headers', () => {
  it('two users with different headers get their own answers from the upstream', async () => {
    expect((await rpc('alice', 'gateway.setCredentials', { server: 'keyed', headers: { 'X-Api-Key': KEYS.alice } })).result).toMatchObject({
      server: 'keyed',
      stored: true,
      headerNames: ['x-api-key'],
    });
    // Bob over /trpc with the real tRPC client.
    const seen: string[] = [];
    const bob = trpcClient(base, await token('bob'), seen);
    await (bob as any).gateway.setCredentials.mutate({ server: 'keyed', headers: { 'x-api-key': KEYS.bob } });
    answers.push(...seen);

    const a = await resolved('alice', 'keyed');
    const b = await resolved('bob', 'keyed');
    expect(a).toEqual({ kind: 'headers', headers: { 'x-api-key': KEYS.alice } });
    expect(b).toEqual({ kind: 'headers', headers: { 'x-api-key': KEYS.bob } });
    expect(await whoami(keyMcp.url, (a as { headers: Record<string, string> }).headers)).toBe('key:alice');
    expect(await whoami(keyMcp.url, (b as { headers: Record<string, string> }).headers)).toBe('key:bob');
    // Without them the upstream refuses: the answers above came from the stored headers.
    await expect(whoami(keyMcp.url, {})).rejects.toThrow();
  });

  it('a user without credentials gets missing, saying what to call', async () => {
    const r = await resolved('carol', 'keyed');
    expect(r.kind).toBe('missing');
    expect((r as { message: string }).message).toMatch(/gateway\.setCredentials|gateway\.connect/);
  });

  it('deleteCredentials removes them; a server that is not perUser or not configured refuses setCredentials', async () => {
    await rpc('dave', 'gateway.setCredentials', { server: 'keyed', headers: { 'x-api-key': KEYS.bob } });
    expect((await rpc('dave', 'gateway.deleteCredentials', { server: 'keyed' })).result).toMatchObject({ server: 'keyed', deleted: true });
    expect((await resolved('dave', 'keyed')).kind).toBe('missing');
    expect((await rpc('dave', 'gateway.deleteCredentials', { server: 'keyed' })).result).toMatchObject({ deleted: false });

    const shared = await rpc('alice', 'gateway.setCredentials', { server: 'shared', headers: { 'x-api-key': 'whatever-value' } });
    expect(shared.error?.data?.appCode).toBe('BAD_REQUEST');
    expect(shared.error?.message).toMatch(/not perUser/);
    expect((await rpc('alice', 'gateway.connect', { server: 'shared' })).error?.data?.appCode).toBe('BAD_REQUEST');
    expect((await rpc('alice', 'gateway.setCredentials', { server: 'nope', headers: { a: 'b' } })).error?.data?.appCode).toBe('NOT_FOUND');
  });

  it('refuses headers the gateway sets itself and values that could split a request, without quoting the value', async () => {
    const host = await rpc('alice', 'gateway.setCredentials', { server: 'keyed', headers: { host: 'evil.example' } });
    expect(host.error?.data?.appCode).toBe('INVALID_PARAMS');
    const crlf = await rpc('alice', 'gateway.setCredentials', { server: 'keyed', headers: { 'x-api-key': 'SPLITSECRET\r\nx-evil: 1' } });
    expect(crlf.error?.data?.appCode).toBe('INVALID_PARAMS');
    expect(JSON.stringify(crlf)).not.toContain('SPLITSECRET');
  });
});

describe('OAuth 2.1 to the upstream', () => {
  it("connect → sign-in at the upstream's server → callback → resolve gives a token the upstream accepts", async () => {
    const flow = await connectAs('alice', 'alice-at-upstream');
    const auth = new URL(flow.authorizationUrl);
    expect(auth.origin).toBe(as.issuer);
    expect(auth.searchParams.get('code_challenge_method')).toBe('S256');
    expect(auth.searchParams.get('resource')).toBe(oauthMcp.url);
    expect(auth.searchParams.get('redirect_uri')).toBe(`${base}/gateway/oauth/callback`);
    expect(auth.searchParams.get('state')!.length).toBeGreaterThanOrEqual(43);
    expect(flow.status).toBe(200);
    expect(flow.html).toContain('Connected to secure');

    const r = await resolved('alice', 'secure');
    expect(r.kind).toBe('headers');
    const headers = (r as { headers: Record<string, string> }).headers;
    expect(Object.keys(headers)).toEqual(['authorization']);
    expect(await whoami(oauthMcp.url, headers)).toBe('oauth:alice-at-upstream');
    // Our own client's token is not what the upstream gets (no passthrough): the upstream refuses it.
    await expect(whoami(oauthMcp.url, { authorization: `Bearer ${await token('alice')}` })).rejects.toThrow();

    // The state is single use: the same callback again is refused and changes nothing.
    const replay = await fetch(flow.callback);
    answers.push(await replay.text());
    expect(replay.status).toBe(400);
  }, 30_000);

  it('an expired access token is refreshed with the refresh token (rotated), and the new one works', async () => {
    const first = (await resolved('alice', 'secure')) as { headers: Record<string, string> };
    await new Promise((r) => setTimeout(r, ACCESS_TTL_SEC * 1000 + 500));
    // The old token really is expired at the upstream.
    await expect(whoami(oauthMcp.url, first.headers)).rejects.toThrow();
    const second = (await resolved('alice', 'secure')) as { kind: string; headers: Record<string, string> };
    expect(second.kind).toBe('headers');
    expect(second.headers.authorization).not.toBe(first.headers.authorization);
    expect(await whoami(oauthMcp.url, second.headers)).toBe('oauth:alice-at-upstream');
    // Concurrent resolves while expired refresh once: every caller gets the same new token.
    await new Promise((r) => setTimeout(r, ACCESS_TTL_SEC * 1000 + 500));
    const many = await Promise.all(Array.from({ length: 5 }, () => resolved('alice', 'secure')));
    const tokens = new Set(many.map((m) => (m as { headers: Record<string, string> }).headers.authorization));
    expect(tokens.size).toBe(1);
    expect(await whoami(oauthMcp.url, (many[0] as { headers: Record<string, string> }).headers)).toBe('oauth:alice-at-upstream');
  }, 30_000);

  it('a revoked grant gives expired with a message that says to call gateway.connect; connecting again works', async () => {
    await connectAs('erin', 'erin-at-upstream');
    const before = (await resolved('erin', 'secure')) as { headers: Record<string, string> };
    expect(await whoami(oauthMcp.url, before.headers)).toBe('oauth:erin-at-upstream');
    expect(as.revokeAccount('erin-at-upstream')).toBeGreaterThan(0);
    // Revoked at once at the upstream (introspection) ...
    await expect(whoami(oauthMcp.url, before.headers)).rejects.toThrow();
    // ... so a gateway told of that 401 learns it now, before the token is due.
    const told = await runtime.upstreamCredentials.rejected({
      server: { name: 'secure', url: oauthMcp.url },
      userId: 'erin',
      headers: before.headers,
    });
    expect(told.kind).toBe('expired');
    expect((told as { message: string }).message).toContain('gateway.connect({ server: "secure" })');
    // ... and once the access token is due, the refresh is refused: expired.
    await new Promise((r) => setTimeout(r, ACCESS_TTL_SEC * 1000 + 500));
    const after = await resolved('erin', 'secure');
    expect(after.kind).toBe('expired');
    expect((after as { message: string }).message).toContain('gateway.connect({ server: "secure" })');

    await connectAs('erin', 'erin-at-upstream');
    const again = (await resolved('erin', 'secure')) as { headers: Record<string, string> };
    expect(await whoami(oauthMcp.url, again.headers)).toBe('oauth:erin-at-upstream');
  }, 30_000);

  it('instances sharing the store refresh a rotating refresh token once: every one gets the same new token', async () => {
    await connectAs('hank', 'hank-at-upstream');
    // Two more instances over the same store (their own in-process state, so only the stored lock serialises them).
    const other = () =>
      new UpstreamCredentials({
        storage: runtime.storage,
        logger: runtime.logger,
        servers: () => ({ name: 'secure', url: oauthMcp.url, allowPrivateNetwork: true, timeoutMs: 10_000 }),
        masterKey: VAULT_KEY,
      });
    const instances = [runtime.upstreamCredentials, other(), other()];
    await new Promise((r) => setTimeout(r, ACCESS_TTL_SEC * 1000 + 500));
    const results = await Promise.all(
      instances.flatMap((c) => [c, c].map((x) => x.resolve({ server: { name: 'secure', url: oauthMcp.url }, userId: 'hank' }))),
    );
    // oidc-provider revokes the whole grant when a rotated refresh token is used twice: one
    // refresh too many would show here as 'expired'.
    expect(results.map((r) => r.kind)).toEqual(Array(6).fill('headers'));
    const tokens = new Set(results.map((r) => (r as { headers: Record<string, string> }).headers.authorization));
    expect(tokens.size).toBe(1);
    for (const t of tokens) accessTokens.push(t!.slice(7));
    expect(await whoami(oauthMcp.url, (results[0] as { headers: Record<string, string> }).headers)).toBe('oauth:hank-at-upstream');
  }, 30_000);

  it('a 401 to a token someone already replaced gives the current one; a 401 to stored headers says to store new ones', async () => {
    const current = (await resolved('alice', 'secure')) as { headers: Record<string, string> };
    const stale = await runtime.upstreamCredentials.rejected({
      server: { name: 'secure', url: oauthMcp.url },
      userId: 'alice',
      headers: { authorization: 'Bearer some-older-token' },
    });
    expect(stale).toEqual(current);
    // The current token refused (as after a revocation at the server that did not reach us): refreshed.
    const fresh = (await runtime.upstreamCredentials.rejected({
      server: { name: 'secure', url: oauthMcp.url },
      userId: 'alice',
      headers: current.headers,
    })) as { kind: string; headers: Record<string, string> };
    expect(fresh.kind).toBe('headers');
    expect(fresh.headers.authorization).not.toBe(current.headers.authorization);
    accessTokens.push(fresh.headers.authorization!.slice(7));
    expect(await whoami(oauthMcp.url, fresh.headers)).toBe('oauth:alice-at-upstream');

    const keyed = (await resolved('bob', 'keyed')) as { headers: Record<string, string> };
    const refusedHeaders = await runtime.upstreamCredentials.rejected({
      server: { name: 'keyed', url: keyMcp.url },
      userId: 'bob',
      headers: keyed.headers,
    });
    expect(refusedHeaders.kind).toBe('expired');
    expect((refusedHeaders as { message: string }).message).toContain('gateway.setCredentials({ server: "keyed", headers })');
  }, 30_000);

  it('deleteCredentials deletes an OAuth grant and revokes it at the authorization server', async () => {
    await connectAs('ivy', 'ivy-at-upstream');
    const before = (await resolved('ivy', 'secure')) as { headers: Record<string, string> };
    expect(await whoami(oauthMcp.url, before.headers)).toBe('oauth:ivy-at-upstream');
    const del = await rpc('ivy', 'gateway.deleteCredentials', { server: 'secure' });
    expect(del.result).toEqual({ server: 'secure', deleted: true, revoked: true });
    expect((await resolved('ivy', 'secure')).kind).toBe('missing');
    // Revoking the refresh token ends the grant, so its access token is refused at once too.
    await expect(whoami(oauthMcp.url, before.headers)).rejects.toThrow();
  }, 30_000);

  it('tokens are never sent to another URL: after the server URL changes, resolve says expired', async () => {
    const moved = await runtime.upstreamCredentials.resolve({ server: { name: 'secure', url: keyMcp.url }, userId: 'alice' });
    expect(moved.kind).toBe('expired');
  });

  it('an authorization URL expires, and a state of ours is needed', async () => {
    let now = Date.now();
    const creds = new UpstreamCredentials({
      storage: runtime.storage,
      logger: runtime.logger,
      servers: () => ({ name: 'secure', url: oauthMcp.url, allowPrivateNetwork: true, timeoutMs: 10_000 }),
      masterKey: VAULT_KEY,
      now: () => now,
    });
    const { authorizationUrl } = await creds.connect('frank', 'secure', {
      redirectUri: `${base}/gateway/oauth/callback`,
      clientMetadataUrl: `${base}/gateway/oauth/client-metadata.json`,
    });
    const callback = new URL(await authorizeAtUpstream(authorizationUrl, 'frank-at-upstream', `${base}/gateway/oauth/callback`));
    now += 11 * 60_000;
    await expect(creds.completeAuthorization(Object.fromEntries(callback.searchParams))).rejects.toThrow(/expired/);
    expect((await creds.resolve({ server: { name: 'secure', url: oauthMcp.url }, userId: 'frank' })).kind).toBe('missing');
    const forged = await fetch(`${base}/gateway/oauth/callback?state=${'A'.repeat(43)}&code=x`);
    expect(forged.status).toBe(400);
  }, 30_000);

  it('serves our client ID metadata document', async () => {
    const doc = (await (await fetch(`${base}/gateway/oauth/client-metadata.json`)).json()) as Record<string, unknown>;
    expect(doc).toMatchObject({
      client_id: `${base}/gateway/oauth/client-metadata.json`,
      redirect_uris: [`${base}/gateway/oauth/callback`],
      token_endpoint_auth_method: 'none',
    });
  });
});

/** A tool call through our own /mcp, as an MCP client of the gateway sees it. */
async function viaGateway(sub: string, tool: string): Promise<{ isError: boolean; text: string }> {
  const client = new Client({ name: 'creds-gateway-e2e', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${await token(sub)}` } },
    }),
  );
  try {
    const r = await client.callTool({ name: tool, arguments: {} });
    const text = (r.content as Array<{ text: string }>)[0]!.text;
    answers.push(JSON.stringify(r));
    return { isError: r.isError === true, text };
  } finally {
    await client.close();
  }
}

describe('through the gateway (/mcp and gateway.callTool)', () => {
  it('a perUser server added at run time (gateway.addServer) takes setCredentials and connect like a configured one', async () => {
    const parsed = resolveConfig({
      mcpServers: {
        addedkeyed: { type: 'http', url: keyMcp.url, perUser: true, allowPrivateNetwork: true },
        addedsecure: { type: 'http', url: oauthMcp.url, perUser: true, allowPrivateNetwork: true },
      },
    }).mcpServers;
    await runtime.gateway.addServer('addedkeyed', parsed.addedkeyed!);
    await runtime.gateway.addServer('addedsecure', parsed.addedsecure!);
    const stored = await rpc('erin', 'gateway.setCredentials', { server: 'addedkeyed', headers: { 'x-api-key': KEYS.bob } });
    expect(stored.error).toBeUndefined();
    expect(stored.result).toMatchObject({ server: 'addedkeyed', stored: true, headerNames: ['x-api-key'] });
    expect(await viaGateway('erin', 'addedkeyed__whoami')).toEqual({ isError: false, text: 'key:bob' });
    const c = await rpc('erin', 'gateway.connect', { server: 'addedsecure' });
    expect(c.error).toBeUndefined();
    const callback = await authorizeAtUpstream(c.result.authorizationUrl, 'erin-at-upstream', `${base}/gateway/oauth/callback`);
    const page = await fetch(callback);
    answers.push(await page.text());
    expect(page.status).toBe(200);
    expect(await viaGateway('erin', 'addedsecure__whoami')).toEqual({ isError: false, text: 'oauth:erin-at-upstream' });
  }, 30_000);

  it('two users with their own static headers get their own answers', async () => {
    expect(await viaGateway('alice', 'keyed__whoami')).toEqual({ isError: false, text: 'key:alice' });
    expect(await viaGateway('bob', 'keyed__whoami')).toEqual({ isError: false, text: 'key:bob' });
  });

  it('without credentials, after connecting, and after the grant is revoked: the tool error says what to call', async () => {
    const none = await viaGateway('judy', 'secure__whoami');
    expect(none.isError).toBe(true);
    expect(none.text).toContain('gateway.connect({ server: "secure" })');

    await connectAs('judy', 'judy-at-upstream');
    expect(await viaGateway('judy', 'secure__whoami')).toEqual({ isError: false, text: 'oauth:judy-at-upstream' });
    const rpcCall = await rpc('judy', 'gateway.callTool', { server: 'secure', tool: 'whoami', arguments: {} });
    expect(rpcCall.result?.content?.[0]?.text).toBe('oauth:judy-at-upstream');

    // Revoked at the upstream's server while judy's connection is open and her token not yet due:
    // the upstream's 401 makes the gateway try a refresh, which is refused.
    as.revokeAccount('judy-at-upstream');
    const revoked = await viaGateway('judy', 'secure__whoami');
    expect(revoked.isError).toBe(true);
    expect(revoked.text).toContain('has expired or was revoked: call gateway.connect({ server: "secure" })');
  }, 30_000);
});

describe('secrets stay secret', () => {
  it("no header value, access token or refresh token is in an answer, a log line or the store's files", async () => {
    const files: string[] = [];
    for (const e of await readdir(dataDir, { withFileTypes: true, recursive: true }))
      if (e.isFile()) files.push(await readFile(join(e.parentPath, e.name), 'utf8').catch(() => ''));
    const secrets = [KEYS.alice, KEYS.bob, 'SECRETHEADER', ...accessTokens, ...as.refreshTokens()];
    expect(accessTokens.length).toBeGreaterThan(3);
    expect(as.refreshTokens().length).toBeGreaterThan(0);
    const haystacks = { answers: answers.join('\n'), logs: logs.join('\n'), store: files.join('\n') };
    expect(haystacks.logs).toContain('gateway: upstream credentials stored');
    for (const [where, text] of Object.entries(haystacks)) {
      for (const s of secrets) expect(text.includes(s), `${where} holds a secret`).toBe(false);
    }
  });
});
