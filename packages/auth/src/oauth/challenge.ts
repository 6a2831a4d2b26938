export { bearerChallenge, mcpResourceUrl, type BearerChallenge } from '@ai-backend/core/internal';

/** Where the protected-resource metadata of /mcp lives for a public base URL (RFC 9728 §3.1). */
export function resourceMetadataUrl(baseUrl: string): string {
  const u = new URL(baseUrl);
  // The well-known segment goes between the host and the resource's path.
  const path = u.pathname.replace(/\/+$/, '');
  return `${u.origin}/.well-known/oauth-protected-resource${path}/mcp`;
}

/**
 * Does a `resource` parameter (RFC 8707) name this resource? MCP 2026-07-28: the canonical form
 * has a lowercase scheme and host, but uppercase ones SHOULD be accepted, and a trailing slash
 * is not significant here. Fragments are never valid in a resource indicator.
 */
export function sameResource(asked: string, resource: string): boolean {
  let u: URL;
  try {
    u = new URL(asked);
  } catch {
    return false;
  }
  if (asked.includes('#')) return false;
  // URL parsing lowercases the scheme and host; the path stays case-sensitive.
  return u.href.replace(/\/$/, '') === resource.replace(/\/$/, '');
}
