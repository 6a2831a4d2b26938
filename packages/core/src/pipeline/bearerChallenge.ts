/**
 * The one builder of `WWW-Authenticate: Bearer` headers, for every entry point's refusals (core's
 * request scope) and the OAuth server's own endpoints (the auth package).
 */
/** What a `WWW-Authenticate: Bearer` challenge says (RFC 6750 §3, RFC 9728 §5.1). */
export interface BearerChallenge {
  /** URL of the protected-resource metadata; MCP clients start discovery from it. */
  resourceMetadata: string;
  /** 'invalid_request' (400), 'invalid_token' (401), 'insufficient_scope' (403); omitted when no credential was sent. */
  error?: 'invalid_request' | 'invalid_token' | 'insufficient_scope';
  errorDescription?: string;
  /** Space-separated scopes the request needs. */
  scope?: string;
}

/**
 * A quoted-string (RFC 9110 §5.6.4) holding only printable ASCII, without `"` and `\`:
 * common client parsers (the MCP SDK's among them) match `name="([^"]+)"` and do not unescape.
 */
function quoted(value: string): string {
  return `"${value.replace(/[^\x20-\x7e]|["\\]/g, '').slice(0, 500)}"`;
}

/** The header value, e.g. `Bearer resource_metadata="https://h/.well-known/oauth-protected-resource/mcp", error="invalid_token"`. */
export function bearerChallenge(c: BearerChallenge): string {
  const parts = [`resource_metadata=${quoted(c.resourceMetadata)}`];
  if (c.error) parts.push(`error=${quoted(c.error)}`);
  if (c.errorDescription) parts.push(`error_description=${quoted(c.errorDescription)}`);
  if (c.scope) parts.push(`scope=${quoted(c.scope)}`);
  return `Bearer ${parts.join(', ')}`;
}
