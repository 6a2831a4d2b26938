import { createHash, randomBytes } from 'node:crypto';
import {
  createRuntime,
  idpSubject,
  MemoryStorage,
  mergeConfig,
  resolveConfig,
  type ConfigInput,
  type Logger,
  type Runtime,
  type Storage,
} from '@ai-backend/core/internal';
import { createOAuthRoutes, type OAuthRoutes } from '../createOAuthRoutes.js';
import { startFakeIdp, type FakeIdp, type FakeIdpUser } from './fakeIdp.js';

export const BASE = 'http://auth.test';
export const ENCRYPTION_KEY = 'k'.repeat(40);
export const PROVIDER_CLIENT_ID = 'our-client-at-idp';
export const PROVIDER_SECRET = 'idp-secret-value';

/** Collects log lines so tests can assert on security events. */
export function memoryLogger(): Logger & { lines: Array<{ level: string; msg: string; fields?: Record<string, unknown> }> } {
  const lines: Array<{ level: string; msg: string; fields?: Record<string, unknown> }> = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => void lines.push({ level, msg, fields });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

export interface Harness {
  idp: FakeIdp;
  runtime: Runtime;
  oauth: OAuthRoutes;
  storage: Storage;
  logger: ReturnType<typeof memoryLogger>;
  /** The signed-in user's stored id: the IdP subject qualified by its issuer. */
  userId: string;
  /** app.request with our base URL. */
  request(path: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

export async function startHarness(
  config: ConfigInput = {},
  user: FakeIdpUser = { sub: 'user-1', email: 'alice@example.com', email_verified: true, name: 'Alice' },
  storage: Storage = new MemoryStorage(),
): Promise<Harness> {
  const idp = await startFakeIdp(PROVIDER_CLIENT_ID, PROVIDER_SECRET, user);
  const logger = memoryLogger();
  const base: ConfigInput = {
    storage: { type: 'memory' },
    oauth: {
      encryptionKey: ENCRYPTION_KEY,
      providerClientId: PROVIDER_CLIENT_ID,
      providerClientSecret: PROVIDER_SECRET,
      provider: { issuer: idp.issuer },
    },
  };
  const runtime = await createRuntime(resolveConfig(mergeConfig(base, config)), { storage, logger });
  const oauth = createOAuthRoutes(runtime);
  await oauth.ready();
  return {
    idp,
    runtime,
    oauth,
    storage,
    logger,
    userId: idpSubject(idp.issuer, user.sub),
    request: (path, init) => Promise.resolve(oauth.app.request(new URL(path, BASE).href, init)),
    async close() {
      await oauth.close();
      await runtime.close();
      await idp.close();
    },
  };
}

export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export const REDIRECT = 'http://127.0.0.1:7777/callback';

export async function register(
  h: Harness,
  meta: Record<string, unknown> = {},
): Promise<{ client_id: string; client_secret?: string } & Record<string, unknown>> {
  const res = await h.request('/register', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', client_name: 'Test Client', ...meta }),
  });
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${await res.text()}`);
  return res.json() as Promise<{ client_id: string; client_secret?: string }>;
}

/** The authorization request's URL; an `extra` value of null leaves that parameter out. */
export function authorizeUrl(clientId: string, challenge: string, extra: Record<string, string | null> = {}): string {
  const u = new URL('/oauth/authorize', BASE);
  const params = {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 'st-123',
    resource: `${BASE}/mcp`,
    scope: 'mcp mcp:call',
    ...extra,
  };
  for (const [k, v] of Object.entries(params)) if (v !== null) u.searchParams.set(k, v);
  return u.pathname + u.search;
}

/** The consent page's hidden fields and the CSRF cookie it set. */
export async function openConsent(
  h: Harness,
  url: string,
): Promise<{ requestId: string; csrf: string; cookie: string; res: Response; html: string }> {
  const res = await h.request(url);
  const html = await res.text();
  const requestId = /name="request_id" value="([^"]+)"/.exec(html)?.[1] ?? '';
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(html)?.[1] ?? '';
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0]!;
  return { requestId, csrf, cookie, res, html };
}

/** The flow's binding cookie an approval set (flowBinding.ts), as a Cookie header. */
export function flowCookie(approved: Response): string {
  return approved.headers
    .getSetCookie()
    .filter((c) => c.startsWith('aib_flow_'))
    .map((c) => c.split(';')[0])
    .join('; ');
}

export function consentBody(requestId: string, csrf: string, decision = 'approve'): string {
  return new URLSearchParams({ request_id: requestId, csrf_token: csrf, decision }).toString();
}

/** Run authorize → consent → provider → callback; returns our code and the final redirect. */
export async function signIn(
  h: Harness,
  clientId: string,
  challenge: string,
  extra: Record<string, string | null> = {},
): Promise<{ code: string | null; location: URL }> {
  const consent = await openConsent(h, authorizeUrl(clientId, challenge, extra));
  const approved = await h.request('/oauth/authorize', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: consent.cookie, origin: BASE },
    body: consentBody(consent.requestId, consent.csrf),
  });
  if (approved.status !== 303) throw new Error(`consent failed: ${approved.status} ${await approved.text()}`);
  // The provider signs the user in at once and sends them to our callback, in the browser that
  // approved: it carries the flow's binding cookie.
  const atIdp = await fetch(approved.headers.get('location')!, { redirect: 'manual' });
  const callback = new URL(atIdp.headers.get('location')!);
  const back = await h.request(callback.pathname + callback.search, { headers: { cookie: flowCookie(approved) } });
  const location = new URL(back.headers.get('location')!);
  return { code: location.searchParams.get('code'), location };
}

export function form(params: Record<string, string>): RequestInit {
  return { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(params).toString() };
}

/** A full sign-in and code exchange: returns the token response. */
export async function obtainTokens(
  h: Harness,
  clientId: string,
): Promise<{ access_token: string; refresh_token: string; expires_in: number; scope: string }> {
  const { verifier, challenge } = pkce();
  const { code } = await signIn(h, clientId, challenge);
  const res = await h.request(
    '/oauth/token',
    form({ grant_type: 'authorization_code', code: code!, redirect_uri: REDIRECT, code_verifier: verifier, client_id: clientId }),
  );
  if (res.status !== 200) throw new Error(`token failed: ${res.status} ${await res.text()}`);
  return res.json() as Promise<{ access_token: string; refresh_token: string; expires_in: number; scope: string }>;
}
