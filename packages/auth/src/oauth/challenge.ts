export { bearerChallenge, mcpResourceUrl, resourceMetadataUrl, type BearerChallenge } from '@ai-backend/core/internal';

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
