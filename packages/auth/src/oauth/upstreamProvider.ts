import { CoreError, isEmailVerified, isUnicodeText } from '@ai-backend/core/internal';
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import type { UpstreamConfig } from './oauthSettings.js';

/** Where and how we talk to the identity provider, after discovery. */
export interface UpstreamEndpoints {
  /** Set for OpenID providers (discovery); the id_token is then verified against it. */
  issuer?: string;
  authorizationUrl: string;
  tokenUrl: string;
  userinfoUrl?: string;
  jwksUri?: string;
  tokenAuthMethod: 'client_secret_basic' | 'client_secret_post';
  scopes: string[];
  /** RFC 9207 §2.3: the provider promises `iss` in every authorization response. */
  issInResponses?: boolean;
}

/** The signed-in user as the provider describes them. Provider tokens go no further than this. */
export interface UpstreamUser {
  /** The provider's own subject (unqualified). */
  sub: string;
  email?: string;
  /** The provider marked `email` verified (`email_verified` true or "true"). */
  emailVerified?: boolean;
  name?: string;
}

/**
 * The issuer that qualifies this provider's subjects (`idp:<issuer>#<sub>`): the OIDC issuer,
 * `https://github.com` for the GitHub preset, or the origin of the authorization endpoint for
 * explicitly configured OAuth 2 providers.
 */
export function subjectIssuer(ep: UpstreamEndpoints): string {
  return ep.issuer ?? new URL(ep.authorizationUrl).origin;
}

export interface UpstreamProviderOptions {
  provider: UpstreamConfig;
  clientId: string;
  clientSecret?: string;
  /** Per-request timeout towards the provider, in ms. Default 10000. */
  timeoutMs?: number;
}

const OIDC_SCOPES = ['openid', 'email', 'profile'];
/** Asymmetric only: an id_token can never be checked with a shared secret taken from a JWKS. */
const ID_TOKEN_ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

const GITHUB: UpstreamEndpoints = {
  authorizationUrl: 'https://github.com/login/oauth/authorize',
  tokenUrl: 'https://github.com/login/oauth/access_token',
  userinfoUrl: 'https://api.github.com/user',
  tokenAuthMethod: 'client_secret_post',
  scopes: ['read:user', 'user:email'],
};

/**
 * The external identity provider our users sign in with: OIDC discovery from `{ issuer }`,
 * explicit `{ authorizationUrl, tokenUrl, userinfoUrl }`, or a preset (google, github).
 * We are its confidential client (providerClientId/Secret) and always use PKCE with it.
 */
export class UpstreamProvider {
  private discovered: Promise<UpstreamEndpoints> | undefined;
  private jwks: ReturnType<typeof createRemoteJWKSet> | undefined;

  constructor(private readonly opts: UpstreamProviderOptions) {}

  /** Endpoints, discovered once (a failed discovery is retried on the next sign-in). */
  endpoints(): Promise<UpstreamEndpoints> {
    this.discovered ??= this.resolve().catch((err: unknown) => {
      this.discovered = undefined;
      throw err;
    });
    return this.discovered;
  }

  async authorizationUrl(p: { callbackUrl: string; state: string; codeChallenge: string; nonce: string }): Promise<string> {
    const ep = await this.endpoints();
    const url = new URL(ep.authorizationUrl);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('client_id', this.opts.clientId);
    url.searchParams.set('redirect_uri', p.callbackUrl);
    url.searchParams.set('scope', ep.scopes.join(' '));
    url.searchParams.set('state', p.state);
    url.searchParams.set('code_challenge', p.codeChallenge);
    url.searchParams.set('code_challenge_method', 'S256');
    if (ep.issuer) url.searchParams.set('nonce', p.nonce);
    return url.href;
  }

  /** Exchange the provider's code and read who signed in. */
  async signIn(p: { code: string; callbackUrl: string; verifier: string; nonce: string }): Promise<UpstreamUser> {
    const ep = await this.endpoints();
    const body = new URLSearchParams({
      grant_type: 'authorization_code',
      code: p.code,
      redirect_uri: p.callbackUrl,
      code_verifier: p.verifier,
    });
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
    const secret = this.opts.clientSecret ?? '';
    if (ep.tokenAuthMethod === 'client_secret_basic') {
      // RFC 6749 §2.3.1: id and secret are form-encoded before base64.
      const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
      headers.authorization = `Basic ${Buffer.from(`${enc(this.opts.clientId)}:${enc(secret)}`).toString('base64')}`;
    } else {
      body.set('client_id', this.opts.clientId);
      if (secret) body.set('client_secret', secret);
    }
    const tokens = await this.json(ep.tokenUrl, { method: 'POST', headers, body }, 'token exchange');
    if (typeof tokens.error === 'string' || typeof tokens.access_token !== 'string') {
      throw new CoreError(
        'UPSTREAM_ERROR',
        `identity provider refused the code${typeof tokens.error === 'string' ? ` (${tokens.error})` : ''}`,
      );
    }

    let claims: JWTPayload = {};
    if (ep.issuer && ep.jwksUri && typeof tokens.id_token === 'string') {
      this.jwks ??= createRemoteJWKSet(new URL(ep.jwksUri));
      try {
        ({ payload: claims } = await jwtVerify(tokens.id_token, this.jwks, {
          issuer: ep.issuer,
          audience: this.opts.clientId,
          algorithms: ID_TOKEN_ALGS,
        }));
      } catch (err) {
        throw new CoreError('UPSTREAM_ERROR', 'identity provider returned an invalid id_token', { cause: err });
      }
      if (claims.nonce !== p.nonce) throw new CoreError('UPSTREAM_ERROR', 'id_token nonce mismatch');
    }
    if (ep.userinfoUrl && (claims.sub === undefined || claims.email === undefined)) {
      const info = await this.json(
        ep.userinfoUrl,
        { headers: { authorization: `Bearer ${tokens.access_token}`, accept: 'application/json', 'user-agent': 'ai-backend' } },
        'userinfo',
      );
      // OIDC Core §5.3.2: userinfo must describe the same subject as the id_token.
      if (claims.sub !== undefined && info.sub !== undefined && info.sub !== claims.sub) {
        throw new CoreError('UPSTREAM_ERROR', 'userinfo subject differs from the id_token');
      }
      claims = { ...info, ...claims };
    }
    return toUser(claims);
  }

  private async resolve(): Promise<UpstreamEndpoints> {
    const p = this.opts.provider;
    if ('preset' in p) {
      if (p.preset === 'github') return { ...GITHUB, scopes: p.scopes ?? GITHUB.scopes };
      return this.discover('https://accounts.google.com', p.scopes);
    }
    if ('issuer' in p) return this.discover(p.issuer, p.scopes);
    return {
      authorizationUrl: p.authorizationUrl,
      tokenUrl: p.tokenUrl,
      userinfoUrl: p.userinfoUrl,
      tokenAuthMethod: p.tokenEndpointAuthMethod ?? 'client_secret_post',
      scopes: p.scopes ?? OIDC_SCOPES,
    };
  }

  private async discover(issuer: string, scopes: string[] | undefined): Promise<UpstreamEndpoints> {
    const base = issuer.replace(/\/+$/, '');
    const doc = await this.json(`${base}/.well-known/openid-configuration`, {}, 'discovery');
    if (typeof doc.issuer !== 'string' || doc.issuer.replace(/\/+$/, '') !== base) {
      throw new CoreError('UPSTREAM_ERROR', 'identity provider discovery document names another issuer');
    }
    const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
    const authorizationUrl = str(doc.authorization_endpoint);
    const tokenUrl = str(doc.token_endpoint);
    if (!authorizationUrl || !tokenUrl) throw new CoreError('UPSTREAM_ERROR', 'identity provider discovery lacks endpoints');
    const methods = Array.isArray(doc.token_endpoint_auth_methods_supported) ? doc.token_endpoint_auth_methods_supported : [];
    return {
      issuer: doc.issuer,
      authorizationUrl,
      tokenUrl,
      userinfoUrl: str(doc.userinfo_endpoint),
      jwksUri: str(doc.jwks_uri),
      // RFC 8414 §2: basic is the default when the list is absent.
      tokenAuthMethod: methods.length === 0 || methods.includes('client_secret_basic') ? 'client_secret_basic' : 'client_secret_post',
      scopes: scopes ?? OIDC_SCOPES,
      issInResponses: doc.authorization_response_iss_parameter_supported === true,
    };
  }

  private async json(url: string, init: RequestInit, what: string): Promise<Record<string, unknown>> {
    let res: Response;
    try {
      res = await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(this.opts.timeoutMs ?? 10_000) });
    } catch (err) {
      const timeout = err instanceof DOMException && err.name === 'TimeoutError';
      throw new CoreError(timeout ? 'UPSTREAM_TIMEOUT' : 'UPSTREAM_ERROR', `identity provider ${what} failed`, { cause: err });
    }
    const body: unknown = await res.json().catch(() => undefined);
    // A token endpoint answers errors with 400 and a JSON body; keep it so the error code shows.
    if (body && typeof body === 'object' && !Array.isArray(body) && (res.ok || what === 'token exchange')) {
      return body as Record<string, unknown>;
    }
    throw new CoreError('UPSTREAM_ERROR', `identity provider ${what} failed (HTTP ${res.status})`);
  }
}

function toUser(claims: Record<string, unknown>): UpstreamUser {
  // GitHub has no `sub`: its stable numeric `id` stands in.
  const rawSub = claims.sub ?? claims.id;
  if ((typeof rawSub !== 'string' && typeof rawSub !== 'number') || String(rawSub).length === 0 || !isUnicodeText(String(rawSub))) {
    throw new CoreError('UPSTREAM_ERROR', 'identity provider did not say who signed in');
  }
  const user: UpstreamUser = { sub: String(rawSub) };
  if (typeof claims.email === 'string' && isUnicodeText(claims.email)) {
    user.email = claims.email;
    // Only a verified address may name an administrator or claim the e-mail index.
    user.emailVerified = isEmailVerified(claims.email_verified);
  }
  const name = claims.name ?? claims.preferred_username ?? claims.login;
  if (typeof name === 'string') user.name = name;
  return user;
}
