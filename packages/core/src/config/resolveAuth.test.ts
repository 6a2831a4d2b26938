import { describe, expect, it } from 'vitest';
import { checkConfig, resolveConfig } from './resolveConfig.js';
import type { ConfigInput } from './schema.js';

const SECRET = 'a-jwt-secret-of-at-least-32-bytes!!';
const OAUTH = { encryptionKey: 'k'.repeat(32), providerClientId: 'c', provider: { preset: 'github' as const } };
const auth = (input: ConfigInput) => resolveConfig({ storage: { type: 'memory' }, ...input }).auth;

describe('config.auth: the auth rules, derived once', () => {
  it('defaults: mode oauth, nothing configured, so it serves without auth but keeps the MCP rules', () => {
    expect(auth({})).toEqual({
      mode: 'oauth',
      verifiers: 'none',
      oauthServer: 'off',
      servesWithoutAuth: true,
      mcpAccessRulesActive: true,
      toolsListNeedsAuth: false,
    });
  });

  it.each([
    // [authType, jwt secret?, oauth pieces?] -> verifiers, oauthServer, servesWithoutAuth
    ['jwt', true, false, 'jwt', 'off', false],
    ['jwt', false, false, 'none', 'off', true],
    ['jwt', true, true, 'jwt', 'off', false], // OAuth pieces alone do not start the server in mode jwt
    ['oauth', true, false, 'none', 'off', true], // HS256 is off in mode oauth unless mcp.auth.jwt.enabled
    ['oauth', false, true, 'oauth', 'running', false],
    ['both', true, false, 'jwt', 'off', false],
    ['both', false, true, 'oauth', 'running', false],
    ['both', true, true, 'jwt+oauth', 'running', false],
    ['both', false, false, 'none', 'off', true],
    ['none', true, false, 'jwt', 'off', true],
    ['none', false, false, 'none', 'off', true],
  ] as const)('authType %s (secret %s, oauth %s)', (authType, secret, oauth, verifiers, oauthServer, servesWithoutAuth) => {
    const a = auth({ mcp: { auth: { authType } }, ...(secret ? { jwt: { secret: SECRET } } : {}), ...(oauth ? { oauth: OAUTH } : {}) });
    expect(a).toMatchObject({ mode: authType, verifiers, oauthServer, servesWithoutAuth });
  });

  it('decides the tri-state enabled flags into auth.verifiers (default by authType, explicit values win) and drops them', () => {
    const c = resolveConfig({ storage: { type: 'memory' }, mcp: { auth: { jwt: { enabled: true }, oauth: { enabled: true } } } });
    // Nothing left to read but the union.
    expect(Object.keys(c.mcp.auth.jwt)).not.toContain('enabled');
    expect(Object.keys(c.mcp.auth.oauth)).not.toContain('enabled');
    expect(Object.keys(c.oauth)).not.toContain('enabled');
    expect(auth({ mcp: { auth: { authType: 'oauth', jwt: { enabled: true } } }, jwt: { secret: SECRET } }).verifiers).toBe('jwt');
    expect(auth({ mcp: { auth: { authType: 'jwt', jwt: { enabled: false } } }, jwt: { secret: SECRET } })).toMatchObject({
      verifiers: 'none',
      servesWithoutAuth: true,
    });
    expect(auth({ mcp: { auth: { authType: 'oauth', oauth: { enabled: false } } }, oauth: OAUTH })).toMatchObject({
      oauthServer: 'running',
      verifiers: 'none',
      servesWithoutAuth: true,
    });
    // mode none accepts our OAuth verifiers only with the server asked for
    expect(auth({ mcp: { auth: { authType: 'none' } }, oauth: OAUTH }).verifiers).toBe('none');
    expect(auth({ mcp: { auth: { authType: 'none' } }, oauth: { ...OAUTH, enabled: true } }).verifiers).toBe('oauth');
  });

  it('oauth.enabled: unset = automatic, true demands the pieces, false forbids', () => {
    expect(auth({}).oauthServer).toBe('off');
    expect(auth({ oauth: OAUTH }).oauthServer).toBe('running');
    expect(auth({ oauth: { ...OAUTH, enabled: false } })).toMatchObject({ oauthServer: 'off', verifiers: 'none' });
    // mode jwt with oauth.enabled true runs the server, and accepts its verifiers once mcp.auth.oauth.enabled says so
    expect(auth({ mcp: { auth: { authType: 'jwt' } }, oauth: { ...OAUTH, enabled: true } })).toMatchObject({
      oauthServer: 'running',
      verifiers: 'none',
    });
    expect(auth({ mcp: { auth: { authType: 'jwt', oauth: { enabled: true } } }, oauth: { ...OAUTH, enabled: true } })).toMatchObject({
      oauthServer: 'running',
      verifiers: 'oauth',
    });
    const r = checkConfig({ oauth: { enabled: true } });
    expect(r.ok).toBe(false);
  });

  it('mcp.authEnforcement overlay: { enabled: true, requireAuth: false } lifts the MCP rules; enabled: false is no override', () => {
    const mcp = (authEnforcement: { enabled?: boolean; requireAuth?: boolean }) =>
      auth({ mcp: { auth: { authType: 'jwt', requireAuthForToolsList: true }, authEnforcement } });
    expect(mcp({})).toMatchObject({ mcpAccessRulesActive: true, toolsListNeedsAuth: true });
    expect(mcp({ requireAuth: false })).toMatchObject({ mcpAccessRulesActive: false, toolsListNeedsAuth: false });
    expect(mcp({ enabled: false, requireAuth: false })).toMatchObject({ mcpAccessRulesActive: true, toolsListNeedsAuth: true });
    expect(auth({ mcp: { auth: { authType: 'none', requireAuthForToolsList: true } } })).toMatchObject({
      mcpAccessRulesActive: false,
      toolsListNeedsAuth: false,
    });
  });

  it('the three flags we never honoured: true accepted and dropped, false a ConfigError naming what to do instead', () => {
    const ok = resolveConfig({
      storage: { type: 'memory' },
      mcp: {
        auth: { oauth: { requireValidSession: true }, jwt: { requireValidSignature: true } },
        authEnforcement: { requireValidSession: true },
      },
    });
    expect(Object.keys(ok.mcp.auth.jwt)).not.toContain('requireValidSignature');
    expect(Object.keys(ok.mcp.auth.oauth)).not.toContain('requireValidSession');
    expect(Object.keys(ok.mcp.authEnforcement)).not.toContain('requireValidSession');
    const bad = checkConfig({
      mcp: {
        auth: { oauth: { requireValidSession: false }, jwt: { requireValidSignature: false } },
        authEnforcement: { requireValidSession: false },
      },
    });
    expect(bad.ok).toBe(false);
    if (!bad.ok) {
      expect(Object.fromEntries(bad.problems.map((p) => [p.path, p.message]))).toEqual({
        'mcp.auth.oauth.requireValidSession': expect.stringMatching(/no longer accepted.*oauth\.sessionCacheMs.*Delete the key/),
        'mcp.auth.jwt.requireValidSignature': expect.stringMatching(/no longer accepted.*always verified.*Delete the key/),
        'mcp.authEnforcement.requireValidSession': expect.stringMatching(/no longer accepted.*oauth\.sessionCacheMs/),
      });
    }
  });

  it('refuses an auth key in the input: it is derived, and says what to set instead', () => {
    const r = checkConfig({ auth: { mode: 'none' } } as never);
    expect(r.ok).toBe(false);
    if (!r.ok)
      expect(r.problems).toEqual([
        {
          path: '',
          message: 'unknown key(s): auth (auth is derived from mcp.auth, jwt and oauth: set those instead)',
          unknownKeys: ['auth'],
        },
      ]);
  });

  it('a resolved config resolves to itself (the derived rules are not recomputed)', () => {
    const c = resolveConfig({ storage: { type: 'memory' } });
    expect(resolveConfig(c)).toBe(c);
  });
});
