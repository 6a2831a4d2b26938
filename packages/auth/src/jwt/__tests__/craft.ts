import { createHmac } from 'node:crypto';

/** Test-only helpers that build tokens by hand, including ones no JWT library would produce. */

export const SECRET = 'test-secret-0123456789-abcdefghijklmnop';
export const ISSUER = 'https://issuer.test';
export const AUDIENCE = 'https://api.test/mcp';

export const now = () => Math.floor(Date.now() / 1000);

export const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

export const hmac = (key: string | Buffer, input: string) => createHmac('sha256', key).update(input).digest('base64url');

/** A compact JWS signed with HMAC-SHA256 over whatever header and payload are given. */
export function signRaw(header: unknown, payload: unknown, key: string | Buffer = SECRET): string {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${hmac(key, input)}`;
}

/** Claims the test config accepts. */
export function goodClaims(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    sub: 'user-1',
    email: 'user1@example.com',
    scopes: ['mcp', 'mcp:call'],
    iss: ISSUER,
    aud: AUDIENCE,
    iat: now(),
    exp: now() + 600,
    ...extra,
  };
}

export const HS256 = { alg: 'HS256', typ: 'JWT' };
