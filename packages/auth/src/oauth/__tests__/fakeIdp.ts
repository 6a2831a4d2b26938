import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

/** Who the fake provider signs in, and how it misbehaves when a test asks it to. */
export interface FakeIdpUser {
  sub: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
}

export interface FakeIdp {
  issuer: string;
  user: FakeIdpUser;
  /** Override the id_token nonce (to test nonce checks). */
  badNonce?: boolean;
  /** Answer the token request with this OAuth error. */
  tokenError?: string;
  /** RFC 9207: advertise `authorization_response_iss_parameter_supported` (default true). */
  advertiseIss?: boolean;
  /** What the authorization response carries as `iss`: our issuer (default), none, or another value. */
  issInResponse?: string | null;
  /** Requests the provider received at its token endpoint (form bodies). */
  tokenRequests: URLSearchParams[];
  close(): Promise<void>;
}

/**
 * A minimal OpenID provider on 127.0.0.1 for unit tests: discovery, an authorize endpoint
 * that signs the configured user in at once, token (with PKCE and client_secret_basic checks),
 * userinfo and JWKS. The end-to-end tests use panva's oidc-provider instead.
 */
// RSA key generation is slow; one key serves every fake provider of a test file.
let keyPair: ReturnType<typeof generateKeyPair> | undefined;

export async function startFakeIdp(clientId: string, clientSecret: string, user: FakeIdpUser): Promise<FakeIdp> {
  const { publicKey, privateKey } = await (keyPair ??= generateKeyPair('RS256'));
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const codes = new Map<string, { challenge: string; nonce: string; redirectUri: string }>();
  const accessTokens = new Set<string>();
  let issuer = '';
  const idp: FakeIdp = { issuer, user, tokenRequests: [], close: async () => undefined };

  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', issuer);
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (url.pathname === '/.well-known/openid-configuration') {
      return json(200, {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        userinfo_endpoint: `${issuer}/userinfo`,
        jwks_uri: `${issuer}/jwks`,
        token_endpoint_auth_methods_supported: ['client_secret_basic'],
        ...(idp.advertiseIss === false ? {} : { authorization_response_iss_parameter_supported: true }),
      });
    }
    if (url.pathname === '/jwks') return json(200, { keys: [jwk] });
    if (url.pathname === '/authorize') {
      const p = url.searchParams;
      if (p.get('client_id') !== clientId || p.get('code_challenge_method') !== 'S256') return json(400, { error: 'invalid_request' });
      const code = randomBytes(16).toString('hex');
      codes.set(code, { challenge: p.get('code_challenge')!, nonce: p.get('nonce') ?? '', redirectUri: p.get('redirect_uri')! });
      const back = new URL(p.get('redirect_uri')!);
      back.searchParams.set('code', code);
      back.searchParams.set('state', p.get('state')!);
      if (idp.issInResponse !== null) back.searchParams.set('iss', idp.issInResponse ?? issuer);
      res.writeHead(302, { location: back.href });
      return res.end();
    }
    if (url.pathname === '/token' && req.method === 'POST') {
      let body = '';
      for await (const chunk of req) body += chunk;
      const form = new URLSearchParams(body);
      idp.tokenRequests.push(form);
      const expected = `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`;
      if (req.headers.authorization !== expected) return json(401, { error: 'invalid_client' });
      if (idp.tokenError) return json(400, { error: idp.tokenError });
      const entry = codes.get(form.get('code') ?? '');
      codes.delete(form.get('code') ?? '');
      const verifier = form.get('code_verifier') ?? '';
      if (
        !entry ||
        entry.redirectUri !== form.get('redirect_uri') ||
        createHash('sha256').update(verifier).digest('base64url') !== entry.challenge
      ) {
        return json(400, { error: 'invalid_grant' });
      }
      const accessToken = randomBytes(16).toString('hex');
      accessTokens.add(accessToken);
      const idToken = await new SignJWT({ nonce: idp.badNonce ? 'other' : entry.nonce })
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setIssuer(issuer)
        .setAudience(clientId)
        .setSubject(idp.user.sub)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey as CryptoKey);
      return json(200, { access_token: accessToken, token_type: 'Bearer', id_token: idToken, expires_in: 300 });
    }
    if (url.pathname === '/userinfo') {
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (!token || !accessTokens.has(token)) return json(401, { error: 'invalid_token' });
      return json(200, idp.user);
    }
    json(404, { error: 'not found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  idp.issuer = issuer;
  idp.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return idp;
}
