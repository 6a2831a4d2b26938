import type { Expiring } from './sessionStore.js';

/** The client authentication methods we accept at the token endpoint. */
export type TokenEndpointAuthMethod = 'none' | 'client_secret_basic' | 'client_secret_post';

/** A client registered through POST /register (RFC 7591). Stored under its client_id. */
export interface ClientRecord extends Expiring {
  client_id: string;
  /** sha256 of the client secret; absent for public clients. */
  client_secret_hash?: string;
  redirect_uris: string[];
  token_endpoint_auth_method: TokenEndpointAuthMethod;
  grant_types: string[];
  response_types: string[];
  client_name?: string;
  client_uri?: string;
  logo_uri?: string;
  scope?: string;
  software_id?: string;
  software_version?: string;
  /** RFC 7591 / OpenID registration: 'native' or 'web' (MCP 2026-07-28 asks clients to send it). */
  application_type?: 'native' | 'web';
  client_id_issued_at: number;
  /** Described by a Client ID Metadata Document at the client_id URL: fetched, never stored. */
  metadata_document?: true;
}

/** The validated parameters of one authorization request, carried from /oauth/authorize to the code. */
export interface AuthorizationRequest {
  clientId: string;
  redirectUri: string;
  /** The request named no redirect_uri (the client registered one): the token request may omit it too. */
  redirectUriOmitted?: true;
  state?: string;
  codeChallenge: string;
  scopes: string[];
  /** The resource (RFC 8707) the token will be for: our /mcp URL. */
  resource: string;
  /** Our issuer at the time of the request (public base URL). */
  issuer: string;
}

/** An authorization request waiting on the consent page. Key: random request id. */
export interface PendingRecord extends Expiring {
  request: AuthorizationRequest;
  /** sha256 of the CSRF token, which also sits in a SameSite=Strict cookie. */
  csrfHash: string;
}

/** Our trip to the identity provider. Key: sha256 of the upstream `state`. */
export interface UpstreamRecord extends Expiring {
  request: AuthorizationRequest;
  /** PKCE verifier of our request to the identity provider. */
  verifier: string;
  nonce: string;
  /** The callback URL sent upstream; the token request must repeat it exactly. */
  callbackUrl: string;
  /**
   * SHA-256 of the browser binding: a secret set as a cookie in the browser that approved the
   * consent, which the callback must carry (flowBinding.ts).
   */
  bindingHash: string;
}

/** A signed-in user's grant to one client. Key: session id (`sid` claim of access tokens). */
export interface SessionRecord extends Expiring {
  sid: string;
  /** Stored subject id, qualified by the identity provider's issuer (`idp:<issuer>#<sub>`). */
  sub: string;
  email?: string;
  /** The identity provider marked `email` verified. */
  emailVerified?: boolean;
  name?: string;
  clientId: string;
  scopes: string[];
  resource: string;
  issuer: string;
  createdAt: number;
}

/** Our authorization code. Key: sha256 of the code. */
export interface CodeRecord extends Expiring {
  sid: string;
  clientId: string;
  redirectUri: string;
  /** See AuthorizationRequest.redirectUriOmitted. */
  redirectUriOmitted?: true;
  codeChallenge: string;
  usedAt?: number;
}

/** A refresh token. Key: sha256 of the token. One family per session: reuse revokes the session. */
export interface RefreshRecord extends Expiring {
  sid: string;
  clientId: string;
  scopes: string[];
  usedAt?: number;
}
