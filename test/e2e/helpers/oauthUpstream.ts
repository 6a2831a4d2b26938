/**
 * Upstream MCP servers for the gateway's per-user credential tests, all real and on 127.0.0.1:
 * panva's oidc-provider as the upstream's own authorization server (dynamic registration, PKCE,
 * resource indicators, rotating refresh tokens, introspection, revocation; an in-memory store the
 * test can revoke grants in), an MCP server built with the v2 SDK that requires its tokens, and
 * one that takes a static per-user API key header. Both answer `whoami` with who they see.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { serve, type ServerType } from '@hono/node-server';
import {
  createMcpHandler,
  getOAuthProtectedResourceMetadataUrl,
  McpServer,
  oauthMetadataResponse,
  requireBearerAuth,
  OAuthError,
  OAuthErrorCode,
  type AuthInfo,
  type OAuthMetadata,
} from '@modelcontextprotocol/server';
import ProviderModule from 'oidc-provider';
import { CookieJar } from '../oauthHelpers.js';

type ProviderCtor = new (
  issuer: string,
  config: Record<string, unknown>,
) => { callback(): (req: IncomingMessage, res: ServerResponse) => void };
const Provider = ProviderModule as unknown as ProviderCtor;

const RS_CLIENT = 'upstream-resource-server';
const RS_SECRET = randomBytes(16).toString('hex');

interface Stored {
  payload: Record<string, unknown>;
  expiresAt?: number;
}

/** oidc-provider's adapter contract over one Map, so the test can act as the server's administrator. */
function memoryAdapter(all: Map<string, Stored>) {
  return class MemoryAdapter {
    constructor(private readonly model: string) {}
    private key(id: string) {
      return `${this.model}:${id}`;
    }
    async upsert(id: string, payload: Record<string, unknown>, expiresIn?: number) {
      all.set(this.key(id), { payload, ...(expiresIn ? { expiresAt: Date.now() + expiresIn * 1000 } : {}) });
    }
    async find(id: string) {
      const s = all.get(this.key(id));
      if (!s || (s.expiresAt !== undefined && s.expiresAt < Date.now())) return undefined;
      return s.payload;
    }
    async findByUid(uid: string) {
      for (const [k, s] of all) if (k.startsWith(`${this.model}:`) && s.payload.uid === uid) return s.payload;
      return undefined;
    }
    async findByUserCode() {
      return undefined;
    }
    async consume(id: string) {
      const s = all.get(this.key(id));
      if (s) s.payload.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id: string) {
      all.delete(this.key(id));
    }
    async revokeByGrantId(grantId: string) {
      for (const [k, s] of all) if (s.payload.grantId === grantId) all.delete(k);
    }
  };
}

export interface UpstreamAuthServer {
  issuer: string;
  /** Every grant of this account is revoked (what the upstream's "disconnect app" does). */
  revokeAccount(accountId: string): number;
  /** The refresh tokens the server holds (to check none leaks). */
  refreshTokens(): string[];
  close(): Promise<void>;
}

export async function startUpstreamAuthServer(opts: { resource: () => string; accessTokenTtlSec: number }): Promise<UpstreamAuthServer> {
  const all = new Map<string, Stored>();
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server: Server = createServer((req, res) => (handler ? handler(req, res) : res.writeHead(503).end()));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    adapter: memoryAdapter(all),
    clients: [{ client_id: RS_CLIENT, client_secret: RS_SECRET, redirect_uris: [], response_types: [], grant_types: [] }],
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => opts.resource(),
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: 'tools',
          audience: opts.resource(),
          accessTokenTTL: opts.accessTokenTtlSec,
          accessTokenFormat: 'opaque',
        }),
      },
    },
    scopes: ['openid', 'offline_access', 'tools'],
    issueRefreshToken: async (_ctx: unknown, client: { grantTypeAllowed(t: string): boolean }) => client.grantTypeAllowed('refresh_token'),
    pkce: { required: () => true },
    cookies: { keys: [randomBytes(16).toString('hex')] },
    ttl: {
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
      AccessToken: opts.accessTokenTtlSec,
      IdToken: 600,
      AuthorizationCode: 60,
      RefreshToken: 3600,
    },
    findAccount: async (_ctx: unknown, id: string) => ({ accountId: id, claims: async () => ({ sub: id }) }),
  });
  handler = provider.callback();
  return {
    issuer,
    revokeAccount(accountId) {
      const grants = new Set<string>();
      for (const s of all.values())
        if (s.payload.accountId === accountId && typeof s.payload.grantId === 'string') grants.add(s.payload.grantId);
      for (const [k, s] of all)
        if (grants.has(s.payload.grantId as string) || (k.startsWith('Grant:') && grants.has(k.slice(6)))) all.delete(k);
      return grants.size;
    },
    refreshTokens: () => [...all.keys()].filter((k) => k.startsWith('RefreshToken:')).map((k) => k.slice('RefreshToken:'.length)),
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

export interface UpstreamMcp {
  url: string;
  /** Requests refused as unauthenticated so far. */
  refused: number;
  close(): Promise<void>;
}

/** One MCP server (v2 SDK, both revisions) whose `whoami` tool answers with `who(request, authInfo)`. */
function whoamiServer(who: (authInfo: AuthInfo | undefined, req: Request | undefined) => string) {
  return createMcpHandler((ctx) => {
    const server = new McpServer({ name: 'whoami-upstream', version: '1.0.0' });
    server.registerTool('whoami', { description: 'Who the upstream sees' }, async () => ({
      content: [{ type: 'text', text: who(ctx.authInfo, ctx.requestInfo) }],
    }));
    return server;
  });
}

async function listen(fetch: (req: Request) => Promise<Response>): Promise<{ base: string; server: ServerType }> {
  return new Promise((resolve) => {
    const server = serve({ fetch, port: 0, hostname: '127.0.0.1' }, (info) => resolve({ base: `http://127.0.0.1:${info.port}`, server }));
  });
}

const closeServer = (s: ServerType) => new Promise<void>((resolve) => ((s as Server).closeAllConnections?.(), s.close(() => resolve())));

/** An MCP server that accepts only access tokens its authorization server issued for it (checked by introspection). */
export async function startOAuthMcp(as: () => UpstreamAuthServer): Promise<UpstreamMcp> {
  let url = '';
  let asMetadata: OAuthMetadata | undefined;
  const verifier = {
    async verifyAccessToken(token: string): Promise<AuthInfo> {
      const res = await fetch(`${as().issuer}/token/introspection`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${RS_CLIENT}:${RS_SECRET}`).toString('base64')}`,
        },
        body: new URLSearchParams({ token }).toString(),
      });
      const info = (await res.json()) as {
        active?: boolean;
        sub?: string;
        aud?: string | string[];
        exp?: number;
        scope?: string;
        client_id?: string;
      };
      if (!info.active) throw new OAuthError(OAuthErrorCode.InvalidToken, 'token is not active');
      const aud = Array.isArray(info.aud) ? info.aud[0] : info.aud;
      return {
        token,
        clientId: info.client_id ?? '',
        scopes: (info.scope ?? '').split(' ').filter(Boolean),
        ...(info.exp ? { expiresAt: info.exp } : {}),
        ...(aud ? { resource: new URL(aud) } : {}),
        extra: { sub: info.sub },
      };
    },
  };
  const mcp = whoamiServer((authInfo) => `oauth:${String(authInfo?.extra?.sub)}`);
  const state = { refused: 0 };
  const { base, server } = await listen(async (req) => {
    asMetadata ??= (await (await fetch(`${as().issuer}/.well-known/openid-configuration`)).json()) as OAuthMetadata;
    const meta = oauthMetadataResponse(req, {
      oauthMetadata: asMetadata,
      resourceServerUrl: new URL(url),
      scopesSupported: ['tools'],
      dangerouslyAllowInsecureIssuerUrl: true,
    });
    if (meta) return meta;
    if (new URL(req.url).pathname !== '/mcp') return new Response('not found', { status: 404 });
    const auth = await requireBearerAuth({
      verifier,
      expectedResource: new URL(url),
      resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(new URL(url)),
    })(req);
    if (auth instanceof Response) {
      state.refused++;
      return auth;
    }
    return mcp.fetch(req, { authInfo: auth });
  });
  url = `${base}/mcp`;
  return {
    url,
    get refused() {
      return state.refused;
    },
    close: () => closeServer(server),
  } as UpstreamMcp;
}

/** An MCP server that knows its users by an API key header (`x-api-key`): static per-user credentials. */
export async function startApiKeyMcp(users: Record<string, string>): Promise<UpstreamMcp> {
  const mcp = whoamiServer((_a, req) => `key:${users[req?.headers.get('x-api-key') ?? ''] ?? 'nobody'}`);
  const state = { refused: 0 };
  const { base, server } = await listen(async (req) => {
    if (!Object.hasOwn(users, req.headers.get('x-api-key') ?? '')) {
      state.refused++;
      return new Response(JSON.stringify({ error: 'unknown api key' }), { status: 401, headers: { 'content-type': 'application/json' } });
    }
    return mcp.fetch(req);
  });
  return {
    url: `${base}/mcp`,
    get refused() {
      return state.refused;
    },
    close: () => closeServer(server),
  } as UpstreamMcp;
}

/**
 * Play the user at the upstream's authorization server: open the authorization URL, sign in
 * as `login` and consent on oidc-provider's screens, and return where it sends the browser
 * back (our callback URL with code, state and iss), without following that last redirect.
 */
export async function authorizeAtUpstream(
  authorizationUrl: string,
  login: string,
  callbackPrefix: string,
  jar = new CookieJar(),
): Promise<string> {
  let url = authorizationUrl;
  let res = await jar.fetch(url);
  for (let hops = 0; hops < 20; hops++) {
    if (res.status >= 300 && res.status < 400) {
      const next = new URL(res.headers.get('location')!, url).href;
      if (next.startsWith(callbackPrefix)) return next;
      url = next;
      res = await jar.fetch(url);
      continue;
    }
    const html = await res.text();
    const uid = /\/interaction\/([^/?#]+)/.exec(url)?.[1];
    if (res.status !== 200 || !uid) throw new Error(`unexpected page ${url}: HTTP ${res.status} ${html.slice(0, 300)}`);
    const form: Record<string, string> = html.includes('name="login"')
      ? { prompt: 'login', login, password: 'any' }
      : { prompt: 'consent' };
    url = new URL(`/interaction/${uid}`, url).href;
    res = await jar.fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    });
  }
  throw new Error('too many redirects');
}
