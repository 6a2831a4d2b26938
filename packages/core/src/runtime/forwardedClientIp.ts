/**
 * The client address from X-Forwarded-For, for use only when trustProxy is set. The LAST entry
 * is the one our own (trusted) proxy appended; earlier entries come from the client and can be
 * anything, so taking the first would let a client pick a fresh rate-limit identity per request.
 */
export function forwardedClientIp(header: string | null | undefined): string | undefined {
  if (!header) return undefined;
  const parts = header.split(',');
  for (let i = parts.length - 1; i >= 0; i--) {
    const ip = parts[i]!.trim();
    if (ip) return ip;
  }
  return undefined;
}

interface NodeSocketHolder {
  socket?: { remoteAddress?: string };
}

/**
 * The client address of a request, the one rule every entry point and the OAuth server use: the
 * forwarded one only with trustProxy, else the Node socket's, which @hono/node-server passes as
 * `env.incoming` (read here without importing the adapter, since server.fetch also runs in other
 * fetch runtimes), else 'unknown'.
 */
export function requestClientIp(forwardedFor: string | null | undefined, env: unknown, trustProxy: boolean): string {
  if (trustProxy) {
    const fwd = forwardedClientIp(forwardedFor);
    if (fwd) return fwd;
  }
  const e = env as { incoming?: NodeSocketHolder; server?: { incoming?: NodeSocketHolder } } | undefined;
  return (e?.server ?? e)?.incoming?.socket?.remoteAddress ?? 'unknown';
}
