import type { ResolvedConfig } from '../config/schema.js';

/** The resource identifier of /mcp (RFC 8707, RFC 9728): exactly the URL clients use for it. */
export function mcpResourceUrl(baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/mcp`;
}

/**
 * Where the protected-resource metadata of /mcp lives (RFC 9728 §3.1): the well-known segment
 * goes between the host and the resource's path, so a public URL `https://h/base` gives
 * `https://h/.well-known/oauth-protected-resource/base/mcp`, at the host's root.
 */
export function resourceMetadataUrl(baseUrl: string): string {
  const u = new URL(mcpResourceUrl(baseUrl));
  return `${u.origin}/.well-known/oauth-protected-resource${u.pathname}`;
}

/**
 * The address clients use to reach this server (for OAuth metadata, redirects and the
 * WWW-Authenticate challenge): oauth.publicUrl when configured, else the request's own URL;
 * X-Forwarded-Proto/Host are honoured only with trustProxy.
 */
export function publicBaseUrl(url: string | URL, headers: Headers, config: ResolvedConfig): string {
  if (config.oauth.publicUrl) return config.oauth.publicUrl.replace(/\/+$/, '');
  const u = new URL(url);
  let proto = u.protocol.replace(/:$/, '');
  let host = headers.get('host') ?? u.host;
  if (config.trustProxy) {
    const fp = headers.get('x-forwarded-proto')?.split(',')[0]?.trim();
    const fh = headers.get('x-forwarded-host')?.split(',')[0]?.trim();
    if (fp === 'http' || fp === 'https') proto = fp;
    if (fh) host = fh;
  }
  // Host comes from the client; keep only characters a host[:port] can have.
  if (!/^[A-Za-z0-9.\-:[\]]+$/.test(host)) host = u.host;
  return `${proto}://${host}`;
}
