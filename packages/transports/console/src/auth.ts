/**
 * Sign-in. With the server's OAuth authorization server the console is a public client
 * (RFC 7591 registration, `token_endpoint_auth_method: none`) using the authorization code flow
 * with PKCE S256, `state` and the `iss` check of RFC 9207. What the flow keeps:
 * - localStorage: only the registered client id (not a credential: a public client has no secret);
 * - sessionStorage, during the redirect only: the PKCE verifier and the state;
 * - sessionStorage while signed in: the access token (this tab only, gone when the tab closes).
 * No token ever travels in a URL. Without OAuth an administrator pastes a token once (JWT-only
 * servers); `serve --dev` prints a link whose one-time code (in the fragment, never sent to a
 * server) is exchanged for a developer token.
 */
const TOKEN = 'ai-backend-console.token';
const FLOW = 'ai-backend-console.flow';
const CLIENT = 'ai-backend-console.client';

export interface Settings {
  oauth: boolean;
  adminScope: string;
  scopes: string[];
  devSignIn: boolean;
}

let token: string | null = sessionStorage.getItem(TOKEN);
let onSignOut: (message?: string) => void = () => undefined;

export const currentToken = () => token;
export function onSignedOut(fn: (message?: string) => void): void {
  onSignOut = fn;
}

export function useToken(t: string): void {
  token = t;
  sessionStorage.setItem(TOKEN, t);
}

export function signOut(message?: string): void {
  const had = token;
  token = null;
  sessionStorage.removeItem(TOKEN);
  if (had) {
    // Revoking ends the whole grant (a no-op for a pasted JWT, which the server cannot revoke).
    void fetch('/oauth/revoke', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: had, client_id: storedClient()?.clientId ?? '' }),
    }).catch(() => undefined);
  }
  onSignOut(message);
}

const b64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
const random = (n = 32) => b64url(crypto.getRandomValues(new Uint8Array(n)));

interface StoredClient {
  clientId: string;
  redirectUri: string;
}
function storedClient(): StoredClient | null {
  try {
    return JSON.parse(localStorage.getItem(CLIENT) ?? 'null') as StoredClient | null;
  } catch {
    return null;
  }
}

interface AsMetadata {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  registration_endpoint: string;
}
const metadata = (): Promise<AsMetadata> =>
  fetch('/.well-known/oauth-authorization-server').then((r) => (r.ok ? r.json() : Promise.reject(new Error('no OAuth metadata'))));
/**
 * The resource our tokens are for (RFC 8707): the /mcp URL, as the protected-resource metadata
 * says. The root document: the path-suffixed one follows the public URL's path (RFC 9728 §3.1).
 */
const resource = (): Promise<string> =>
  fetch('/.well-known/oauth-protected-resource')
    .then((r) => r.json())
    .then((m: { resource: string }) => m.resource);

async function registeredClient(meta: AsMetadata, redirectUri: string, fresh = false): Promise<string> {
  const known = storedClient();
  if (!fresh && known && known.redirectUri === redirectUri) return known.clientId;
  const res = await fetch(meta.registration_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'ai-backend console',
      redirect_uris: [redirectUri],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    }),
  });
  const body = (await res.json()) as { client_id?: string; error_description?: string };
  if (!res.ok || !body.client_id) throw new Error(`registration refused: ${body.error_description ?? res.status}`);
  localStorage.setItem(CLIENT, JSON.stringify({ clientId: body.client_id, redirectUri } satisfies StoredClient));
  return body.client_id;
}

/** Go to the authorization server (consent, then the identity provider). */
export async function startOAuth(settings: Settings): Promise<void> {
  const [meta, aud] = await Promise.all([metadata(), resource()]);
  const redirectUri = `${location.origin}/console/`;
  const clientId = await registeredClient(meta, redirectUri);
  const verifier = random(48);
  const challenge = b64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
  const state = random();
  sessionStorage.setItem(
    FLOW,
    JSON.stringify({ verifier, state, clientId, redirectUri, resource: aud, issuer: meta.issuer, tokenEndpoint: meta.token_endpoint }),
  );
  const url = new URL(meta.authorization_endpoint);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state,
    resource: aud,
    scope: [...settings.scopes, settings.adminScope].join(' '),
  }).toString();
  location.assign(url.href);
}

/**
 * Back from the authorization server (`?code&state&iss` on /console/): check state and issuer,
 * exchange the code with the verifier, and remove the code from the address bar. Null when this
 * load is not a return from sign-in.
 */
export async function finishOAuth(): Promise<string | null> {
  const params = new URLSearchParams(location.search);
  const code = params.get('code');
  const error = params.get('error');
  if (!code && !error) return null;
  history.replaceState(null, '', `/console/${location.hash}`);
  const flow = JSON.parse(sessionStorage.getItem(FLOW) ?? 'null') as {
    verifier: string;
    state: string;
    clientId: string;
    redirectUri: string;
    resource: string;
    issuer: string;
    tokenEndpoint: string;
  } | null;
  sessionStorage.removeItem(FLOW);
  if (error) throw new Error(`sign-in refused: ${params.get('error_description') ?? error}`);
  if (!flow || params.get('state') !== flow.state) throw new Error('sign-in answer does not match a sign-in started here (state)');
  if (params.get('iss') !== null && params.get('iss') !== flow.issuer) throw new Error('sign-in answer from another issuer');
  const res = await fetch(flow.tokenEndpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: code!,
      redirect_uri: flow.redirectUri,
      client_id: flow.clientId,
      code_verifier: flow.verifier,
      resource: flow.resource,
    }),
  });
  const body = (await res.json()) as { access_token?: string; error?: string; error_description?: string };
  if (!res.ok || !body.access_token) {
    // A client the server forgot (expired, or the encryption key changed) registers again next time.
    if (body.error === 'invalid_client') localStorage.removeItem(CLIENT);
    throw new Error(`token exchange refused: ${body.error_description ?? body.error ?? res.status}`);
  }
  useToken(body.access_token);
  return body.access_token;
}

/** `serve --dev`: the link's fragment `#dev=<code>` is exchanged for a developer token. */
export async function finishDevSignIn(): Promise<string | null> {
  const m = /^#dev=([\w-]+)/.exec(location.hash);
  if (!m) return null;
  history.replaceState(null, '', '/console/#/overview');
  const res = await fetch('/console/dev-session', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ code: m[1] }),
  });
  const body = (await res.json()) as { token?: string; error?: string };
  if (!res.ok || !body.token) throw new Error(body.error ?? `developer sign-in refused (${res.status})`);
  useToken(body.token);
  return body.token;
}
