import type { ResolvedConfig } from '@ai-backend/core';

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_HOSTS.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

function hostName(hostHeader: string): string {
  // [::1]:8000 → [::1]; localhost:8000 → localhost
  if (hostHeader.startsWith('[')) return hostHeader.slice(0, hostHeader.indexOf(']') + 1);
  return hostHeader.split(':')[0]!.toLowerCase();
}

/**
 * DNS-rebinding protection for /mcp (MCP transports: servers MUST validate Origin).
 * Bound to loopback: Host must be a loopback name and a browser Origin must be a loopback
 * origin or explicitly allowed. Otherwise Origin must be in mcp.allowedOrigins (or the CORS
 * list when that is not '*'). Returns a reason when the request must be refused.
 */
export function createOriginGuard(config: ResolvedConfig): (headers: Headers) => string | null {
  const loopback = isLoopbackHost(config.host);
  const allowedHosts = config.mcp.allowedHosts ? new Set(config.mcp.allowedHosts.map((h) => h.toLowerCase())) : null;
  const corsList = config.cors.origin.includes('*') ? null : config.cors.origin;
  const allowedOrigins = config.mcp.allowedOrigins ?? corsList;
  const originSet = allowedOrigins ? new Set(allowedOrigins) : null;

  return (headers) => {
    const host = headers.get('host');
    if (host) {
      const name = hostName(host);
      if (allowedHosts ? !allowedHosts.has(name) && !allowedHosts.has(host.toLowerCase()) : loopback && !isLoopbackHost(name)) {
        return 'host not allowed';
      }
    }
    const origin = headers.get('origin');
    if (!origin) return null; // not a browser request
    if (originSet?.has(origin)) return null;
    let parsed: URL;
    try {
      parsed = new URL(origin);
    } catch {
      return 'origin not allowed';
    }
    if (loopback) return isLoopbackHost(parsed.hostname.startsWith('[') ? parsed.hostname : parsed.hostname) ? null : 'origin not allowed';
    return originSet ? 'origin not allowed' : null;
  };
}
