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
