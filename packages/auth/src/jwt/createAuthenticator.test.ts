import { CoreError, resolveConfig, type ConfigInput, type Identity } from '@ai-backend/core';
import { exportJWK, exportSPKI, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { createAuthenticator, type OAuthTokenVerifier } from './createAuthenticator.js';
import { AUDIENCE, goodClaims, HS256, ISSUER, now, SECRET, signRaw } from './__tests__/craft.js';

const jwtBase = { secret: SECRET, issuer: ISSUER, audience: AUDIENCE };
/** The pieces that run our OAuth authorization server: its tokens are verified only when it runs (config.auth.verifiers). */
const oauthServer = { encryptionKey: 'k'.repeat(32), providerClientId: 'c', provider: { preset: 'github' as const } };
const cfg = (input: ConfigInput) => resolveConfig(input);

async function identityOf(result: Promise<{ ok: boolean; identity?: Identity; error?: CoreError }>) {
  const r = await result;
  if (!r.ok) throw new Error(`refused: ${r.error?.message}`);
  return r.identity!;
}
async function errorOf(result: Promise<{ ok: boolean; error?: CoreError }>) {
  const r = await result;
  expect(r.ok).toBe(false);
  return r.error!;
}

describe('createAuthenticator: valid JWTs', () => {
  const auth = createAuthenticator(
    cfg({ mcp: { auth: { authType: 'jwt' } }, jwt: jwtBase, admin: { users: ['root-sub', 'Boss@Example.com'] } }),
  );

  it('returns the identity from the claims', async () => {
    const id = await identityOf(auth(signRaw(HS256, goodClaims())));
    expect(id).toEqual({
      sub: 'user-1',
      email: 'user1@example.com',
      emailVerified: false,
      scopes: ['mcp', 'mcp:call'],
      isAdmin: false,
      via: 'jwt',
    });
  });

  it('reads the scopes array and the space-separated scope string, merged', async () => {
    const id = await identityOf(auth(signRaw(HS256, goodClaims({ scopes: ['a'], scope: 'b  c a' }))));
    expect(id.scopes).toEqual(['a', 'b', 'c']);
    const onlyString = await identityOf(auth(signRaw(HS256, goodClaims({ scopes: undefined, scope: 'mcp:call' }))));
    expect(onlyString.scopes).toEqual(['mcp:call']);
  });

  it('accepts an aud array that contains ours, and no email', async () => {
    const id = await identityOf(auth(signRaw(HS256, goodClaims({ aud: ['https://x.test', AUDIENCE], email: undefined }))));
    expect(id.sub).toBe('user-1');
    expect(id).not.toHaveProperty('email');
  });

  it('allows clock skew within clockToleranceSec for exp, nbf and iat', async () => {
    const token = signRaw(HS256, goodClaims({ exp: now() - 10, nbf: now() + 10, iat: now() + 10 }));
    expect((await auth(token)).ok).toBe(true);
  });

  it('detects administrators by sub, by verified email (case-insensitive) and by the admin scope', async () => {
    const bySub = await identityOf(auth(signRaw(HS256, goodClaims({ sub: 'root-sub', email: undefined }))));
    const byEmail = await identityOf(auth(signRaw(HS256, goodClaims({ email: 'boss@example.COM', email_verified: true }))));
    const byEmailString = await identityOf(auth(signRaw(HS256, goodClaims({ email: 'boss@example.com', email_verified: 'true' }))));
    const byScope = await identityOf(auth(signRaw(HS256, goodClaims({ scopes: ['mcp:admin'] }))));
    const plain = await identityOf(auth(signRaw(HS256, goodClaims({ scopes: ['mcp:administrator', 'admin'] }))));
    expect([bySub.isAdmin, byEmail.isAdmin, byEmailString.isAdmin, byScope.isAdmin, plain.isAdmin]).toEqual([
      true,
      true,
      true,
      true,
      false,
    ]);
  });

  it('an unverified e-mail (claim missing, false or "false") never names an administrator', async () => {
    for (const verified of [undefined, false, 'false', 'yes', 1]) {
      const id = await identityOf(auth(signRaw(HS256, goodClaims({ email: 'boss@example.com', email_verified: verified }))));
      expect(id).toMatchObject({ isAdmin: false, emailVerified: false });
    }
  });

  it('keeps plain subjects as they are but escapes ones that could pass for an identity-provider id', async () => {
    expect((await identityOf(auth(signRaw(HS256, goodClaims({ sub: 'user-77' }))))).sub).toBe('user-77');
    expect((await identityOf(auth(signRaw(HS256, goodClaims({ sub: 'idp:https://idp.example#user-77' }))))).sub).toBe(
      'jwt:idp:https://idp.example#user-77',
    );
    expect((await identityOf(auth(signRaw(HS256, goodClaims({ sub: 'jwt:x' }))))).sub).toBe('jwt:jwt:x');
  });

  it('honours a custom admin scope', async () => {
    const custom = createAuthenticator(cfg({ mcp: { auth: { authType: 'jwt' } }, jwt: jwtBase, admin: { scope: 'ops' } }));
    expect((await identityOf(custom(signRaw(HS256, goodClaims({ scopes: ['ops'] }))))).isAdmin).toBe(true);
    expect((await identityOf(custom(signRaw(HS256, goodClaims({ scopes: ['mcp:admin'] }))))).isAdmin).toBe(false);
  });

  it('needs no issuer or audience when none is configured', async () => {
    const open = createAuthenticator(cfg({ mcp: { auth: { authType: 'jwt' } }, jwt: { secret: SECRET } }));
    expect((await open(signRaw(HS256, goodClaims({ iss: undefined, aud: undefined })))).ok).toBe(true);
  });
});

describe('createAuthenticator: allowExpiredTokens', () => {
  const auth = createAuthenticator(
    cfg({ mcp: { auth: { authType: 'jwt', jwt: { allowExpiredTokens: true, requiredScopes: ['mcp'] } } }, jwt: jwtBase }),
  );

  it('accepts expired tokens and tokens without exp', async () => {
    expect((await auth(signRaw(HS256, goodClaims({ exp: now() - 86_400 })))).ok).toBe(true);
    expect((await auth(signRaw(HS256, goodClaims({ exp: undefined })))).ok).toBe(true);
  });

  it('still checks the signature, issuer and scopes of an expired token', async () => {
    const expired = { exp: now() - 86_400 };
    expect((await errorOf(auth(signRaw(HS256, goodClaims(expired), 'x'.repeat(40))))).message).toBe('invalid signature');
    expect((await errorOf(auth(signRaw(HS256, goodClaims({ ...expired, iss: 'https://evil.test' }))))).message).toBe('issuer mismatch');
    expect((await errorOf(auth(signRaw(HS256, goodClaims({ ...expired, scopes: [] }))))).appCode).toBe('INSUFFICIENT_SCOPE');
  });
});

describe('createAuthenticator: which verifiers apply', () => {
  const hs = signRaw(HS256, goodClaims());

  it("authType 'none' without a secret refuses a presented token with a clear reason", async () => {
    const err = await errorOf(createAuthenticator(cfg({ mcp: { auth: { authType: 'none' } } }))(hs));
    expect(err.appCode).toBe('INVALID_TOKEN');
    expect(err.message).toMatch(/authType is 'none'.*jwt\.secret/);
  });

  it("authType 'none' with a secret verifies a presented token", async () => {
    const auth = createAuthenticator(cfg({ mcp: { auth: { authType: 'none' } }, jwt: jwtBase }));
    expect((await identityOf(auth(hs))).sub).toBe('user-1');
    expect((await errorOf(auth(signRaw(HS256, goodClaims(), 'y'.repeat(40))))).message).toBe('invalid signature');
  });

  it("authType 'oauth' refuses HS256 tokens unless mcp.auth.jwt.enabled is set", async () => {
    const oauthOnly = createAuthenticator(cfg({ mcp: { auth: { authType: 'oauth' } }, jwt: jwtBase }));
    expect((await errorOf(oauthOnly(hs))).message).toBe('bearer tokens cannot be verified: no token verifier is configured');
    const withJwt = createAuthenticator(cfg({ mcp: { auth: { authType: 'oauth', jwt: { enabled: true } } }, jwt: jwtBase }));
    expect((await withJwt(hs)).ok).toBe(true);
  });

  it("authType 'jwt' with jwt.enabled false accepts nothing", async () => {
    const auth = createAuthenticator(cfg({ mcp: { auth: { authType: 'jwt', jwt: { enabled: false } } }, jwt: jwtBase }));
    expect((await errorOf(auth(hs))).appCode).toBe('INVALID_TOKEN');
  });

  it('requireValidSignature is removed: false is a config error, true is accepted and signatures are verified', async () => {
    expect(() => cfg({ mcp: { auth: { authType: 'jwt', jwt: { requireValidSignature: false } } }, jwt: jwtBase })).toThrow(
      /requireValidSignature: false is no longer accepted.*always verified/,
    );
    const auth = createAuthenticator(cfg({ mcp: { auth: { authType: 'jwt', jwt: { requireValidSignature: true } } }, jwt: jwtBase }));
    expect((await errorOf(auth(signRaw(HS256, goodClaims(), 'z'.repeat(40))))).message).toBe('invalid signature');
    expect((await errorOf(auth(signRaw({ alg: 'none' }, goodClaims()).replace(/[^.]+$/, '')))).message).toBe('algorithm not allowed');
  });

  it('refuses a symmetric or none algorithm in the OAuth allow-list at construction', () => {
    const config = cfg({ mcp: { auth: { authType: 'oauth' } }, oauth: oauthServer });
    const oauthVerifier: OAuthTokenVerifier = async () => null;
    expect(() => createAuthenticator(config, { oauthVerifier, oauthAlgorithms: ['ES256', 'HS256'] })).toThrow(TypeError);
    expect(() => createAuthenticator(config, { oauthVerifier, oauthAlgorithms: ['None'] })).toThrow(TypeError);
  });
});

describe('createAuthenticator: OAuth access tokens', async () => {
  // Stands in for the authorization server's verifier: our own ES256 key, audience = resource.
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const attacker = await generateKeyPair('ES256');
  const calls: string[] = [];
  const oauthVerifier: OAuthTokenVerifier = async (token) => {
    calls.push(token);
    const { payload } = await jwtVerify(token, publicKey, { algorithms: ['ES256'], audience: AUDIENCE, requiredClaims: ['exp'] });
    if (payload.sub === 'revoked') return null;
    if (payload.sub === 'core-error') throw new CoreError('SESSION_NOT_FOUND', 'session not found');
    // A verifier that claims admin rights on its own must not decide them.
    return {
      sub: payload.sub!,
      scopes: String(payload.scope ?? '')
        .split(' ')
        .filter(Boolean),
      isAdmin: true,
      via: 'oauth',
    };
  };
  const es256 = (claims: Record<string, unknown>, key = privateKey, header: Record<string, unknown> = {}) =>
    new SignJWT({ scope: 'mcp', ...claims })
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: 'k1', ...header })
      .setSubject(String(claims.sub ?? 'oauth-user'))
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(typeof claims.exp === 'number' ? claims.exp : '1h')
      .sign(key);
  const auth = createAuthenticator(
    cfg({ mcp: { auth: { authType: 'both' } }, jwt: jwtBase, oauth: oauthServer, admin: { users: ['boss'] } }),
    { oauthVerifier },
  );

  it('routes ES256 tokens to the OAuth verifier and HS256 tokens to the shared secret', async () => {
    const viaOauth = await identityOf(auth(await es256({})));
    expect(viaOauth).toMatchObject({ sub: 'oauth-user', scopes: ['mcp'], via: 'oauth', isAdmin: false });
    expect((await identityOf(auth(signRaw(HS256, goodClaims())))).via).toBe('jwt');
  });

  it('applies the configured admin rule to OAuth identities: listed users only, the scope alone is not enough', async () => {
    expect((await identityOf(auth(await es256({ sub: 'boss' })))).isAdmin).toBe(true);
    // Our server grants mcp:admin only to listed users; once delisted, the scope in an issued token no longer counts.
    expect((await identityOf(auth(await es256({ scope: 'mcp mcp:admin' })))).isAdmin).toBe(false);
  });

  it('refuses header-embedded keys before the OAuth verifier sees the token', async () => {
    const jwk = await exportJWK(attacker.publicKey);
    const before = calls.length;
    const err = await errorOf(auth(await es256({}, attacker.privateKey, { jwk })));
    expect(err.message).toBe('token header parameter "jwk" is not accepted');
    expect(calls.length).toBe(before);
  });

  it('maps verifier outcomes: null, jose errors, CoreErrors', async () => {
    expect((await errorOf(auth(await es256({ sub: 'revoked' })))).message).toBe('invalid token');
    expect((await errorOf(auth(await es256({}, attacker.privateKey)))).message).toBe('invalid signature');
    expect((await errorOf(auth(await es256({ exp: now() - 600 })))).message).toBe('token expired');
    expect((await errorOf(auth(await es256({ sub: 'core-error' })))).appCode).toBe('SESSION_NOT_FOUND');
  });

  it('the OAuth verifier is not used when authType is jwt', async () => {
    const jwtOnly = createAuthenticator(cfg({ mcp: { auth: { authType: 'jwt' } }, jwt: jwtBase }), { oauthVerifier });
    expect((await errorOf(jwtOnly(await es256({})))).message).toBe('algorithm not allowed');
  });

  it('nor when the resolved verifiers leave it out, whatever verifier is passed', async () => {
    // The server runs (oauth.enabled) but mcp.auth.oauth.enabled false refuses its tokens: one decision, config.auth.verifiers.
    const refused = cfg({ mcp: { auth: { authType: 'both', oauth: { enabled: false } } }, jwt: jwtBase, oauth: oauthServer });
    expect(refused.auth).toMatchObject({ verifiers: 'jwt', oauthServer: 'running' });
    expect((await errorOf(createAuthenticator(refused, { oauthVerifier })(await es256({})))).message).toBe('algorithm not allowed');
    // Without the server's pieces nothing runs to issue such tokens, so none is accepted either.
    const noServer = cfg({ mcp: { auth: { authType: 'both' } }, jwt: jwtBase });
    expect(noServer.auth.verifiers).toBe('jwt');
    expect((await errorOf(createAuthenticator(noServer, { oauthVerifier })(await es256({})))).message).toBe('algorithm not allowed');
  });

  it('refuses algorithm confusion against the published public key', async () => {
    const pem = Buffer.from(await exportSPKI(publicKey));
    // HS256 keyed with our public key goes to the shared-secret verifier, never to the public key.
    expect((await errorOf(auth(signRaw(HS256, goodClaims(), pem)))).message).toBe('invalid signature');
    // An ES256 header over an HMAC made with the public key fails the ECDSA check.
    expect(await errorOf(auth(signRaw({ alg: 'ES256', kid: 'k1' }, goodClaims(), pem)))).toBeInstanceOf(CoreError);
    expect((await errorOf(auth(signRaw({ alg: 'ES256', kid: 'k1' }, goodClaims(), pem)))).message).toBe('invalid signature');
  });
});
