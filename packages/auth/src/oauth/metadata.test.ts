import { afterEach, describe, expect, it } from 'vitest';
import { BASE, startHarness, type Harness } from './__tests__/harness.js';

let h: Harness;
afterEach(() => h?.close());

describe('GET /.well-known/oauth-authorization-server', () => {
  it('serves RFC 8414 metadata with absolute addresses and what MCP clients need', async () => {
    h = await startHarness();
    const res = await h.request('/.well-known/oauth-authorization-server');
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    const m = await res.json();
    expect(m).toMatchObject({
      issuer: BASE,
      authorization_endpoint: `${BASE}/oauth/authorize`,
      token_endpoint: `${BASE}/oauth/token`,
      userinfo_endpoint: `${BASE}/oauth/userinfo`,
      registration_endpoint: `${BASE}/register`,
      jwks_uri: `${BASE}/.well-known/jwks.json`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
    });
    expect(m.token_endpoint_auth_methods_supported).toContain('none');
    expect(m.scopes_supported).toEqual(['mcp', 'mcp:call', 'mcp:admin']);
  });

  it('answers OPTIONS with 200 and the fixed CORS headers whatever cors says', async () => {
    h = await startHarness({ cors: { origin: ['https://only.example.com'] } });
    const res = await h.request('/.well-known/oauth-authorization-server', {
      method: 'OPTIONS',
      headers: { origin: 'https://other.example' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-methods')).toBe('GET, POST, OPTIONS');
  });

  it('uses forwarded proto and host only with trustProxy', async () => {
    h = await startHarness();
    const headers = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'public.example.com' };
    expect((await (await h.request('/.well-known/oauth-authorization-server', { headers })).json()).issuer).toBe(BASE);
    await h.close();
    h = await startHarness({ trustProxy: true });
    expect((await (await h.request('/.well-known/oauth-authorization-server', { headers })).json()).issuer).toBe(
      'https://public.example.com',
    );
  });

  it('uses oauth.publicUrl when set', async () => {
    h = await startHarness({ oauth: { publicUrl: 'https://api.example.com/' } });
    const m = await (await h.request('/.well-known/oauth-authorization-server')).json();
    expect(m.issuer).toBe('https://api.example.com');
    expect(m.token_endpoint).toBe('https://api.example.com/oauth/token');
  });
});

describe('protected resource metadata (RFC 9728)', () => {
  it.each(['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp'])(
    '%s names /mcp and this server',
    async (path) => {
      h = await startHarness();
      const res = await h.request(path);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({
        resource: `${BASE}/mcp`,
        authorization_servers: [BASE],
        scopes_supported: ['mcp', 'mcp:call'],
        bearer_methods_supported: ['header'],
      });
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
    },
  );
});

describe('well-known URLs answer only for what they name (RFC 8414 §3.3, RFC 9728 §3.3)', () => {
  it('a suffix that is not /mcp or our issuer path is 404, not a document the client must reject', async () => {
    h = await startHarness();
    for (const path of [
      '/.well-known/oauth-protected-resource/mcp/',
      '/.well-known/oauth-protected-resource/other',
      '/.well-known/oauth-protected-resource/mcp/x',
      '/.well-known/oauth-authorization-server/mcp',
      '/.well-known/oauth-authorization-server/tenant1',
    ]) {
      expect((await h.request(path)).status, path).toBe(404);
    }
    // We are not an OpenID provider (no id_token): clients find RFC 8414 metadata instead.
    expect((await h.request('/.well-known/openid-configuration')).status).toBe(404);
  });

  it('with a public URL under a path, the suffixed URLs are derived from it', async () => {
    h = await startHarness({ oauth: { publicUrl: 'https://api.example.com/base' } });
    const as = await h.request('/.well-known/oauth-authorization-server/base');
    expect((await as.json()).issuer).toBe('https://api.example.com/base');
    // MCP 2025-03-26 clients look at the root: still served.
    expect((await (await h.request('/.well-known/oauth-authorization-server')).json()).issuer).toBe('https://api.example.com/base');
    const prm = await h.request('/.well-known/oauth-protected-resource/base/mcp');
    expect((await prm.json()).resource).toBe('https://api.example.com/base/mcp');
    expect((await (await h.request('/.well-known/oauth-protected-resource')).json()).resource).toBe('https://api.example.com/base/mcp');
    expect((await h.request('/.well-known/oauth-protected-resource/mcp')).status).toBe(404);
    expect((await h.request('/.well-known/oauth-authorization-server/other')).status).toBe(404);
  });
});

describe('GET /.well-known/jwks.json', () => {
  it('publishes only public key material', async () => {
    h = await startHarness();
    const { keys } = await (await h.request('/.well-known/jwks.json')).json();
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
    expect(keys[0].kid).toBeTruthy();
    expect(keys[0]).not.toHaveProperty('d');
  });

  it('keeps the previous key after rotation', async () => {
    h = await startHarness();
    const before = (await (await h.request('/.well-known/jwks.json')).json()).keys[0].kid;
    const after = await h.oauth.rotateSigningKey();
    const kids = (await (await h.request('/.well-known/jwks.json')).json()).keys.map((k: { kid: string }) => k.kid);
    expect(kids).toEqual([after, before]);
  });
});
