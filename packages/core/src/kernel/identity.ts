import type { CoreError } from './CoreError.js';

/**
 * Who is calling and how it was established: the domain's view of a caller, shared by every
 * layer (services key their records by `Identity.sub`), so it lives at the bottom, not in the
 * tRPC context.
 */

/**
 * Signal topic of a revoked session of our authorization server; the message is its id
 * (`Identity.sessionId`). Every instance forgets the session and ends the streams opened with it.
 */
export const SESSION_REVOKED = 'oauth.sessionRevoked';

/** Who is calling, as established by the auth layer (JWT or OAuth access token). */
export interface Identity {
  /**
   * The stored id of the caller: a JWT subject as is, an identity-provider subject qualified by
   * its issuer (`idp:<issuer>#<sub>`); see trpc/subjectId.ts. Every per-user key uses it.
   */
  sub: string;
  email?: string;
  /** The issuer vouched for `email` (`email_verified` true or "true"). Only then may it name an administrator or claim the e-mail index. */
  emailVerified?: boolean;
  scopes: string[];
  /** Administrator: listed in admin.users or holding the admin scope. */
  isAdmin: boolean;
  /** How the identity was established. */
  via: 'jwt' | 'oauth' | 'apiKey';
  /** OAuth client id when the token came from our authorization server. */
  clientId?: string;
  /**
   * The session (grant) of an access token from our authorization server: revoking it (sign-out,
   * token revocation, a refresh token's reuse) publishes SESSION_REVOKED with this id, which ends
   * the streams the caller opened with its tokens at once (pipeline/watchCredential.ts).
   */
  sessionId?: string;
  /** The API key the caller presented (via 'apiKey'): its owner is `sub`, these are its narrower rules. */
  apiKey?: ApiKeyGrant;
}

/** The rules of the API key a call was made with (docs/api-keys.md); enforced by the ai and billing services. */
export interface ApiKeyGrant {
  id: string;
  /** Providers the key may call; undefined: any. */
  providers?: readonly string[];
  /** micromatch globs over `model` or `provider/model`; undefined: any. */
  models?: readonly string[];
  /** micromatch globs over procedure paths or MCP tool names the key may call; undefined: what keyAccess allows. */
  tools?: readonly string[];
  requestsPerMinute?: number;
  tokensPerMinute?: number;
  concurrent?: number;
  /**
   * The scopes the key's owner held at their last sign-in, read at this call; set only when the
   * key holds a scope that counts only if its owner holds it too (an MCP gateway server's `allowScopes`).
   */
  ownerScopes?: readonly string[];
}

/**
 * The entry point a call came through: labels statistics, logs and recent calls (never a rule). `openai` and `anthropic`: the /v1 wire
 * formats.
 */
export type TransportName = 'trpc' | 'rpc' | 'mcp' | 'openai' | 'anthropic' | 'internal';

export type AuthResult = { ok: true; identity: Identity } | { ok: false; error: CoreError };

/** Verifies a bearer token; provided by @ai-backend/auth and installed by createServer. */
export type Authenticator = (token: string, facts?: AuthFacts) => Promise<AuthResult>;

/** What the request knows besides the token (an API key may be limited to some client addresses). */
export interface AuthFacts {
  ip?: string;
  /**
   * The HTTP request the token came with. Tokens of our own authorization server must name, as
   * their audience, the /mcp URL of the server the request addressed (RFC 8707; MCP: tokens are
   * accepted only by the resource they were issued for), which its URL and headers give.
   */
  request?: { url: string; headers: Headers };
}
