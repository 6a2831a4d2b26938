/**
 * The secret values of a connection's headers and environment (6 characters or more), with a
 * scheme's credential alone too (`Bearer <token>` → `<token>`).
 */
export function credentialValues(headers: Record<string, string>, env: Record<string, string> | undefined): string[] {
  const values = new Set<string>();
  for (const v of [...Object.values(headers), ...Object.values(env ?? {})]) {
    const value = v.trim();
    if (value.length >= 6) values.add(value);
    const credential = /^(?:bearer|basic|token)\s+(\S{6,})$/i.exec(value)?.[1];
    if (credential) values.add(credential);
  }
  return [...values].sort((a, b) => b.length - a.length);
}
