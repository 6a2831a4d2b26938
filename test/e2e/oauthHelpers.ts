/**
 * Helpers for the OAuth end-to-end tests: panva's oidc-provider as the real identity provider
 * on 127.0.0.1, a cookie-jar fetch that completes its dev login and consent screens, and an
 * in-memory OAuthClientProvider for the official MCP SDK client.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import Provider from 'oidc-provider';

export const IDP_CLIENT_ID = 'ai-backend';
export const IDP_CLIENT_SECRET = 'idp-client-secret-for-tests';

export interface TestIdp {
  issuer: string;
  /** Register our callback URL as the provider's client redirect URI (done once our server has a port). */
  configure(callbackUrl: string): void;
  close(): Promise<void>;
}

/**
 * Start the HTTP server first (so its address is known), configure the provider once our
 * server's callback URL is known: the provider's clients are fixed at construction.
 */
export async function startIdp(): Promise<TestIdp> {
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server: Server = createServer((req, res) => {
    if (!handler) {
      res.writeHead(503).end();
      return;
    }
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    configure(callbackUrl) {
      const provider = new Provider(issuer, {
        clients: [
          {
            client_id: IDP_CLIENT_ID,
            client_secret: IDP_CLIENT_SECRET,
            redirect_uris: [callbackUrl],
            grant_types: ['authorization_code'],
            response_types: ['code'],
            token_endpoint_auth_method: 'client_secret_basic',
          },
        ],
        features: { devInteractions: { enabled: true } },
        pkce: { required: () => true },
        claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
        cookies: { keys: [randomBytes(16).toString('hex')] },
        // Explicit lifetimes keep the provider from printing a notice per artefact kind.
        ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600, AuthorizationCode: 60 },
        findAccount: async (_ctx, id) => ({
          accountId: id,
          claims: async () => ({ sub: id, email: `${id}@example.com`, email_verified: true, name: `User ${id}` }),
        }),
      });
      handler = provider.callback();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A tiny cookie jar per origin (enough for our consent page and the provider's screens). */
export class CookieJar {
  private readonly jar = new Map<string, Map<string, string>>();

  header(url: string): string {
    const cookies = this.jar.get(new URL(url).origin);
    return cookies ? [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') : '';
  }

  store(url: string, res: Response): void {
    const origin = new URL(url).origin;
    const cookies = this.jar.get(origin) ?? new Map<string, string>();
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const i = pair!.indexOf('=');
      const name = pair!.slice(0, i).trim();
      const expired = attrs.some((a) => /^\s*max-age=0\s*$/i.test(a)) || pair!.slice(i + 1) === '';
      if (expired) cookies.delete(name);
      else cookies.set(name, pair!.slice(i + 1));
    }
    this.jar.set(origin, cookies);
  }

  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    const cookie = this.header(url);
    if (cookie) headers.set('cookie', cookie);
    const res = await fetch(url, { ...init, headers, redirect: 'manual' });
    this.store(url, res);
    return res;
  }
}

const formPost = (body: Record<string, string>): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(body).toString(),
});

/**
 * Play the user's part from our authorization URL to the client's redirect URI: approve our
 * consent page, sign in at the provider as `login`, grant its consent. Returns the final
 * redirect to the client (with our code, state and iss) and what the consent page showed.
 */
export async function completeSignIn(
  authorizationUrl: string,
  login: string,
  jar = new CookieJar(),
): Promise<{ redirect: URL; consentHtml: string }> {
  const consentRes = await jar.fetch(authorizationUrl);
  if (consentRes.status !== 200) throw new Error(`consent page: HTTP ${consentRes.status} ${await consentRes.text()}`);
  const consentHtml = await consentRes.text();
  const field = (name: string) => new RegExp(`name="${name}" value="([^"]+)"`).exec(consentHtml)?.[1] ?? '';
  const action = new URL(/<form method="post" action="([^"]+)"/.exec(consentHtml)![1]!, authorizationUrl).href;
  let res = await jar.fetch(action, {
    ...formPost({ request_id: field('request_id'), csrf_token: field('csrf_token'), decision: 'approve' }),
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: new URL(authorizationUrl).origin },
  });
  let url = action;
  for (let hops = 0; hops < 20; hops++) {
    if (res.status >= 300 && res.status < 400) {
      const next = new URL(res.headers.get('location')!, url);
      // Back at the client: done.
      if (
        next.searchParams.has('iss') &&
        (next.searchParams.has('code') || next.searchParams.has('error')) &&
        !next.pathname.startsWith('/oauth/callback')
      ) {
        return { redirect: next, consentHtml };
      }
      url = next.href;
      res = await jar.fetch(url);
      continue;
    }
    const html = await res.text();
    const uid = /\/interaction\/([^/?#]+)/.exec(url)?.[1];
    if (res.status !== 200 || !uid) throw new Error(`unexpected page ${url}: HTTP ${res.status} ${html.slice(0, 300)}`);
    const isLogin = html.includes('name="login"');
    url = new URL(`/interaction/${uid}`, url).href;
    res = await jar.fetch(url, formPost(isLogin ? { prompt: 'login', login, password: 'any' } : { prompt: 'consent' }));
  }
  throw new Error('too many redirects');
}

/** An OAuthClientProvider kept in memory; the test plays the browser when asked to redirect. */
export class MemoryOAuthProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  lastState = '';
  authorizationUrl: URL | undefined;

  constructor(readonly redirectUrl: string) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'MCP SDK e2e client',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  state(): string {
    this.lastState = randomBytes(16).toString('base64url');
    return this.lastState;
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery') {
    if (scope === 'all' || scope === 'client') this.info = undefined;
    if (scope === 'all' || scope === 'tokens') this.saved = undefined;
  }
}
