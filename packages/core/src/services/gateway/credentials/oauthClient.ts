import { createHash, randomBytes } from 'node:crypto';
import { CoreError } from '../../../kernel/CoreError.js';
import type { AuthServerMetadata } from './oauthDiscovery.js';
import { jsonObject, oauthErrorCode, postForm, postJson, upstreamFailure, type UpstreamNet } from './oauthHttp.js';

/** Our identity at an upstream's authorization server. */
export interface OAuthClient {
  clientId: string;
  clientSecret?: string;
  /** none | client_secret_basic | client_secret_post */
  tokenEndpointAuthMethod: string;
}

/** What a token endpoint answered, checked. */
export interface TokenSet {
  accessToken: string;
  refreshToken?: string;
  expiresAt?: number;
  /** Epoch ms of the answer: with expiresAt, the token's lifetime. */
  obtainedAt: number;
  scope?: string;
}

/** PKCE (RFC 7636) with S256: the verifier stays with us, the challenge goes in the authorization URL. */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

const SECRET_METHODS = ['client_secret_basic', 'client_secret_post'];

/** RFC 7591 dynamic registration: a public client (PKCE) where the server allows it, else one with a secret. */
export async function registerClient(as: AuthServerMetadata, redirectUri: string, net: UpstreamNet): Promise<OAuthClient> {
  if (!as.registration_endpoint)
    throw new CoreError(
      'NOT_CONFIGURED',
      `the authorization server ${as.issuer} offers neither client ID metadata documents (with an https public URL of ours) nor dynamic registration: configure oauth.clientId for this server`,
    );
  const supported = as.token_endpoint_auth_methods_supported;
  const method =
    !supported || supported.includes('none') ? 'none' : (SECRET_METHODS.find((m) => supported.includes(m)) ?? 'client_secret_basic');
  const res = await postJson(
    as.registration_endpoint,
    {
      client_name: 'ai-backend MCP gateway',
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: method,
    },
    net,
  );
  const doc = res.status === 201 || res.status === 200 ? jsonObject(res) : undefined;
  if (!doc || typeof doc.client_id !== 'string') throw upstreamFailure(`registering with ${as.issuer}`, res);
  const secret = typeof doc.client_secret === 'string' ? doc.client_secret : undefined;
  const granted =
    typeof doc.token_endpoint_auth_method === 'string' ? doc.token_endpoint_auth_method : secret ? 'client_secret_basic' : 'none';
  return { clientId: doc.client_id, ...(secret ? { clientSecret: secret } : {}), tokenEndpointAuthMethod: granted };
}

/** Client authentication at the token endpoint (RFC 6749 §2.3.1; basic encodes id and secret first). */
function authenticate(client: OAuthClient, form: Record<string, string>): Record<string, string> {
  if (client.clientSecret && client.tokenEndpointAuthMethod === 'client_secret_basic') {
    const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
    return { authorization: `Basic ${Buffer.from(`${enc(client.clientId)}:${enc(client.clientSecret)}`).toString('base64')}` };
  }
  form.client_id = client.clientId;
  if (client.clientSecret && client.tokenEndpointAuthMethod === 'client_secret_post') form.client_secret = client.clientSecret;
  return {};
}

/** The answer of a token request: tokens, or `invalid_grant` (the grant is gone: revoked, expired, used). */
export type TokenAnswer = { ok: true; tokens: TokenSet } | { ok: false; invalidGrant: true };

export async function tokenRequest(
  tokenEndpoint: string,
  client: OAuthClient,
  params: Record<string, string>,
  net: UpstreamNet,
  now: number,
): Promise<TokenAnswer> {
  const form = { ...params };
  const headers = authenticate(client, form);
  const res = await postForm(tokenEndpoint, form, net, headers);
  if (res.status === 400 || res.status === 401) {
    const code = oauthErrorCode(res);
    // invalid_grant: the code or refresh token is no longer good; the user has to authorize again.
    if (code === 'invalid_grant') return { ok: false, invalidGrant: true };
  }
  const doc = res.status === 200 ? jsonObject(res) : undefined;
  if (!doc) throw upstreamFailure('the token request', res);
  if (typeof doc.access_token !== 'string' || !doc.access_token)
    throw new CoreError('UPSTREAM_ERROR', 'the token endpoint answered without an access token');
  // Only bearer tokens can be sent as a header; DPoP-bound or other kinds are not supported.
  if (typeof doc.token_type !== 'string' || doc.token_type.toLowerCase() !== 'bearer')
    throw new CoreError('UPSTREAM_ERROR', 'the token endpoint answered with a token that is not a bearer token');
  const expiresIn = typeof doc.expires_in === 'number' && doc.expires_in > 0 ? doc.expires_in : undefined;
  return {
    ok: true,
    tokens: {
      accessToken: doc.access_token,
      obtainedAt: now,
      ...(typeof doc.refresh_token === 'string' && doc.refresh_token ? { refreshToken: doc.refresh_token } : {}),
      ...(expiresIn ? { expiresAt: now + expiresIn * 1000 } : {}),
      ...(typeof doc.scope === 'string' ? { scope: doc.scope } : {}),
    },
  };
}

/** RFC 7009 revocation, best effort (deleting the credentials must not depend on the upstream). */
export async function revokeToken(
  endpoint: string,
  client: OAuthClient,
  token: string,
  hint: 'refresh_token' | 'access_token',
  net: UpstreamNet,
): Promise<boolean> {
  const form: Record<string, string> = { token, token_type_hint: hint };
  const headers = authenticate(client, form);
  const res = await postForm(endpoint, form, net, headers).catch(() => undefined);
  return res?.status === 200;
}
