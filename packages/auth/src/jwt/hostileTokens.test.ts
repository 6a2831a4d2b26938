import { generateKeyPairSync, createSign } from 'node:crypto';
import { resolveConfig, type AuthResult } from '@ai-backend/core/internal';
import { describe, expect, it } from 'vitest';
import { createAuthenticator } from './createAuthenticator.js';
import { MAX_TOKEN_LENGTH } from './inspectToken.js';
import { AUDIENCE, b64, goodClaims, HS256, hmac, ISSUER, now, SECRET, signRaw } from './__tests__/craft.js';

// A public key an attacker can read (e.g. from a JWKS endpoint) and try to use as an HMAC secret.
const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const PUBLIC_PEM = rsa.publicKey.export({ type: 'spki', format: 'pem' }).toString();

const config = resolveConfig({
  mcp: { auth: { authType: 'jwt', jwt: { requiredScopes: ['mcp', 'mcp:call'] } } },
  jwt: { secret: SECRET, issuer: ISSUER, audience: AUDIENCE, clockToleranceSec: 30 },
});
const authenticate = createAuthenticator(config);

const unsigned = (alg: string) => `${b64({ alg, typ: 'JWT' })}.${b64(goodClaims({ scopes: ['mcp', 'mcp:call', 'mcp:admin'] }))}.`;
const rs256 = (header: unknown, payload: unknown) => {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${createSign('RSA-SHA256').update(input).sign(rsa.privateKey).toString('base64url')}`;
};
const valid = signRaw(HS256, goodClaims());
const [vh, vp, vs] = valid.split('.') as [string, string, string];

type Case = [name: string, token: string, code: 'INVALID_TOKEN' | 'INSUFFICIENT_SCOPE', reason: string | RegExp];
const corpus: Case[] = [
  // alg none in every spelling, with and without a signature part
  ['alg none', unsigned('none'), 'INVALID_TOKEN', 'algorithm not allowed'],
  ['alg None', unsigned('None'), 'INVALID_TOKEN', 'algorithm not allowed'],
  ['alg NONE', unsigned('NONE'), 'INVALID_TOKEN', 'algorithm not allowed'],
  ['alg nOnE', unsigned('nOnE'), 'INVALID_TOKEN', 'algorithm not allowed'],
  ['alg none carrying a valid HS256 signature', `${b64({ alg: 'none' })}.${vp}.${vs}`, 'INVALID_TOKEN', 'algorithm not allowed'],
  ['alg hs256 (wrong case)', signRaw({ alg: 'hs256' }, goodClaims()), 'INVALID_TOKEN', 'algorithm not allowed'],
  ['alg HS512 signed with the secret', `${b64({ alg: 'HS512' })}.${vp}.${vs}`, 'INVALID_TOKEN', 'algorithm not allowed'],
  ['alg missing', signRaw({ typ: 'JWT' }, goodClaims()), 'INVALID_TOKEN', 'token header has no algorithm'],
  // algorithm confusion
  ['HS256 signed with the published RSA public key PEM', signRaw(HS256, goodClaims(), PUBLIC_PEM), 'INVALID_TOKEN', 'invalid signature'],
  [
    'RS256 header, HMAC signature keyed with the public PEM',
    signRaw({ alg: 'RS256' }, goodClaims(), PUBLIC_PEM),
    'INVALID_TOKEN',
    'algorithm not allowed',
  ],
  ['RS256 validly signed with an attacker key', rs256({ alg: 'RS256' }, goodClaims()), 'INVALID_TOKEN', 'algorithm not allowed'],
  // signature
  ['wrong secret', signRaw(HS256, goodClaims(), 'another-secret-0123456789-abcdefghijkl'), 'INVALID_TOKEN', 'invalid signature'],
  ['tampered payload (sub changed)', `${vh}.${b64(goodClaims({ sub: 'admin' }))}.${vs}`, 'INVALID_TOKEN', 'invalid signature'],
  [
    'tampered payload (scope added)',
    `${vh}.${b64(goodClaims({ scopes: ['mcp', 'mcp:call', 'mcp:admin'] }))}.${vs}`,
    'INVALID_TOKEN',
    'invalid signature',
  ],
  ['signature stripped', `${vh}.${vp}.`, 'INVALID_TOKEN', 'invalid signature'],
  ['signed with an empty key', signRaw(HS256, goodClaims(), ''), 'INVALID_TOKEN', 'invalid signature'],
  // time
  ['expired', signRaw(HS256, goodClaims({ iat: now() - 7200, exp: now() - 3600 })), 'INVALID_TOKEN', 'token expired'],
  ['expired just beyond tolerance', signRaw(HS256, goodClaims({ exp: now() - 31 })), 'INVALID_TOKEN', 'token expired'],
  ['no exp', signRaw(HS256, goodClaims({ exp: undefined })), 'INVALID_TOKEN', 'token has no expiry'],
  ['exp as a string', signRaw(HS256, goodClaims({ exp: String(now() + 600) })), 'INVALID_TOKEN', 'invalid exp claim'],
  ['nbf in the future beyond tolerance', signRaw(HS256, goodClaims({ nbf: now() + 120 })), 'INVALID_TOKEN', 'token not yet valid'],
  ['iat in the future beyond tolerance', signRaw(HS256, goodClaims({ iat: now() + 120 })), 'INVALID_TOKEN', 'token issued in the future'],
  // issuer and audience
  ['wrong iss', signRaw(HS256, goodClaims({ iss: 'https://evil.test' })), 'INVALID_TOKEN', 'issuer mismatch'],
  ['missing iss', signRaw(HS256, goodClaims({ iss: undefined })), 'INVALID_TOKEN', 'missing iss claim'],
  ['wrong aud', signRaw(HS256, goodClaims({ aud: 'https://other.test/mcp' })), 'INVALID_TOKEN', 'audience mismatch'],
  [
    'aud array without ours',
    signRaw(HS256, goodClaims({ aud: ['https://a.test', 'https://b.test'] })),
    'INVALID_TOKEN',
    'audience mismatch',
  ],
  ['missing aud', signRaw(HS256, goodClaims({ aud: undefined })), 'INVALID_TOKEN', 'missing aud claim'],
  // scopes
  ['no scopes at all', signRaw(HS256, goodClaims({ scopes: undefined })), 'INSUFFICIENT_SCOPE', 'insufficient scope'],
  ['one required scope missing', signRaw(HS256, goodClaims({ scopes: ['mcp'] })), 'INSUFFICIENT_SCOPE', 'insufficient scope'],
  [
    'scope string missing one',
    signRaw(HS256, goodClaims({ scopes: undefined, scope: 'mcp mcp:list' })),
    'INSUFFICIENT_SCOPE',
    'insufficient scope',
  ],
  ['scopes claim of the wrong type', signRaw(HS256, goodClaims({ scopes: 'mcp mcp:call' })), 'INVALID_TOKEN', 'invalid scopes claim'],
  // subject and other claims
  ['numeric sub', signRaw(HS256, goodClaims({ sub: 12345 })), 'INVALID_TOKEN', 'invalid sub claim'],
  ['missing sub', signRaw(HS256, goodClaims({ sub: undefined })), 'INVALID_TOKEN', 'missing sub claim'],
  ['empty sub', signRaw(HS256, goodClaims({ sub: '' })), 'INVALID_TOKEN', 'invalid sub claim'],
  ['email as an array', signRaw(HS256, goodClaims({ email: ['boss@example.com'] })), 'INVALID_TOKEN', 'invalid email claim'],
  // Not Unicode text: every per-user storage key is built with encodeURIComponent, which throws.
  ['sub with an unpaired surrogate', signRaw(HS256, goodClaims({ sub: 'user-\ud800' })), 'INVALID_TOKEN', 'invalid sub claim'],
  ['email with an unpaired surrogate', signRaw(HS256, goodClaims({ email: '\udc00@example.com' })), 'INVALID_TOKEN', 'invalid email claim'],
  // header tricks
  ['kid path traversal', signRaw({ ...HS256, kid: '../../dev/null' }, goodClaims()), 'INVALID_TOKEN', 'invalid key id'],
  ['kid path traversal, empty key', signRaw({ ...HS256, kid: '../../dev/null' }, goodClaims(), ''), 'INVALID_TOKEN', 'invalid key id'],
  ['kid SQL injection', signRaw({ ...HS256, kid: "' OR 1=1 --" }, goodClaims()), 'INVALID_TOKEN', 'invalid key id'],
  ['kid not a string', signRaw({ ...HS256, kid: 7 }, goodClaims()), 'INVALID_TOKEN', 'invalid key id'],
  [
    'embedded jwk (attacker oct key)',
    signRaw({ ...HS256, jwk: { kty: 'oct', k: b64('attacker-key') } }, goodClaims(), 'attacker-key'),
    'INVALID_TOKEN',
    /"jwk"/,
  ],
  ['jku', signRaw({ ...HS256, jku: 'https://evil.test/jwks.json' }, goodClaims()), 'INVALID_TOKEN', /"jku"/],
  ['x5u', signRaw({ ...HS256, x5u: 'https://evil.test/cert.pem' }, goodClaims()), 'INVALID_TOKEN', /"x5u"/],
  ['x5c', signRaw({ ...HS256, x5c: ['MIIB'] }, goodClaims()), 'INVALID_TOKEN', /"x5c"/],
  ['crit header', signRaw({ ...HS256, crit: ['exp'] }, goodClaims()), 'INVALID_TOKEN', /"crit"/],
  ['b64 false (unencoded payload)', signRaw({ ...HS256, b64: false, crit: ['b64'] }, goodClaims()), 'INVALID_TOKEN', /"crit"|"b64"/],
  ['typ of an ID token / JWE', signRaw({ ...HS256, typ: 'JOSE+JSON' }, goodClaims()), 'INVALID_TOKEN', 'unexpected token type'],
  // malformed
  ['empty string', '', 'INVALID_TOKEN', 'empty token'],
  ['garbage', 'not a token at all', 'INVALID_TOKEN', 'malformed token'],
  ['two-part token', `${vh}.${vp}`, 'INVALID_TOKEN', 'malformed token'],
  ['five-part (JWE shaped) token', `${vh}.${vp}.${vs}.aaaa.bbbb`, 'INVALID_TOKEN', 'malformed token'],
  ['whitespace inside', `${vh}. ${vp}.${vs}`, 'INVALID_TOKEN', 'malformed token'],
  ['huge token', signRaw(HS256, goodClaims({ pad: 'x'.repeat(MAX_TOKEN_LENGTH) })), 'INVALID_TOKEN', 'token too large'],
  [
    'non-JSON header',
    `${b64('{alg:HS256')}.${vp}.${hmac(SECRET, `${b64('{alg:HS256')}.${vp}`)}`,
    'INVALID_TOKEN',
    'malformed token header',
  ],
  ['header is a JSON array', signRaw(['HS256'], goodClaims()), 'INVALID_TOKEN', 'malformed token header'],
  ['header is JSON null', signRaw(null, goodClaims()), 'INVALID_TOKEN', 'malformed token header'],
  ['non-JSON payload', signRaw(HS256, 'sub=admin'), 'INVALID_TOKEN', 'malformed token'],
  ['payload is a JSON array', signRaw(HS256, [goodClaims()]), 'INVALID_TOKEN', 'malformed token'],
];

function refusal(result: AuthResult) {
  expect(result.ok).toBe(false);
  if (result.ok) throw new Error('unreachable');
  return result.error;
}

describe('hostile and malformed JWT corpus', () => {
  it('has at least 25 entries', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(25);
  });

  it('accepts the untampered token the corpus is built from', async () => {
    const result = await authenticate(valid);
    expect(result).toMatchObject({ ok: true, identity: { sub: 'user-1', via: 'jwt' } });
  });

  it.each(corpus)('refuses: %s', async (_name, token, code, reason) => {
    const error = refusal(await authenticate(token));
    expect(error.appCode).toBe(code);
    expect(error.message).toMatch(typeof reason === 'string' ? new RegExp(`^${reason.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) : reason);
    if (code === 'INSUFFICIENT_SCOPE') expect(error.details).toEqual({ requiredScopes: ['mcp', 'mcp:call'] });
    // Refusals never echo the token back.
    if (token.length > 20) expect(error.message).not.toContain(token.slice(0, 20));
  });
});
