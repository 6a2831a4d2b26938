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
      jwtEnabled: false,
      oauthServerEnabled: false,
      oauthTokensAccepted: false,
      servesWithoutAuth: true,
      mcpAccessRulesActive: true,
      toolsListNeedsAuth: false,
    });
  });

  it.each([
    // [authType, jwt secret?, oauth pieces?] -> jwtEnabled, oauthServerEnabled, servesWithoutAuth
    ['jwt', true, false, true, false, false],
    ['jwt', false, false, false, false, true],
    ['jwt', true, true, true, false, false], // OAuth pieces alone do not start the server in mode jwt
    ['oauth', true, false, false, false, true], // HS256 is off in mode oauth unless mcp.auth.jwt.enabled
    ['oauth', false, true, false, true, false],
    ['both', true, false, true, false, false],
    ['both', false, true, false, true, false],
    ['both', false, false, false, false, true],
    ['none', true, false, true, false, true],
  ] as const)('authType %s (secret %s, oauth %s)', (authType, secret, oauth, jwtEnabled, oauthServerEnabled, servesWithoutAuth) => {
    const a = auth({ mcp: { auth: { authType } }, ...(secret ? { jwt: { secret: SECRET } } : {}), ...(oauth ? { oauth: OAUTH } : {}) });
    expect(a).toMatchObject({ mode: authType, jwtEnabled, oauthServerEnabled, servesWithoutAuth });
  });

  it('resolves the tri-state enabled flags to booleans whose default follows authType', () => {
    const c = (authType: 'oauth' | 'jwt' | 'both' | 'none') =>
      resolveConfig({ storage: { type: 'memory' }, mcp: { auth: { authType } } }).mcp.auth;
    expect([c('oauth').jwt.enabled, c('jwt').jwt.enabled, c('both').jwt.enabled, c('none').jwt.enabled]).toEqual([false, true, true, true]);
    expect([c('oauth').oauth.enabled, c('jwt').oauth.enabled, c('both').oauth.enabled, c('none').oauth.enabled]).toEqual([
      true,
      false,
      true,
      true,
    ]);
    // Explicit values win.
    expect(auth({ mcp: { auth: { authType: 'oauth', jwt: { enabled: true } } }, jwt: { secret: SECRET } }).jwtEnabled).toBe(true);
    expect(auth({ mcp: { auth: { authType: 'jwt', jwt: { enabled: false } } }, jwt: { secret: SECRET } })).toMatchObject({
      jwtEnabled: false,
      servesWithoutAuth: true,
    });
    expect(auth({ mcp: { auth: { authType: 'oauth', oauth: { enabled: false } } }, oauth: OAUTH })).toMatchObject({
      oauthServerEnabled: true,
      oauthTokensAccepted: false,
      servesWithoutAuth: true,
    });
  });

  it('oauth.enabled: unset = automatic, true demands the pieces, false forbids; resolved to a boolean', () => {
    expect(resolveConfig({ storage: { type: 'memory' } }).oauth.enabled).toBe(false);
    expect(resolveConfig({ storage: { type: 'memory' }, oauth: OAUTH }).oauth.enabled).toBe(true);
    expect(resolveConfig({ storage: { type: 'memory' }, oauth: { ...OAUTH, enabled: false } }).oauth.enabled).toBe(false);
    // mode jwt with oauth.enabled true runs the server and accepts its tokens once mcp.auth.oauth.enabled says so
    expect(auth({ mcp: { auth: { authType: 'jwt', oauth: { enabled: true } } }, oauth: { ...OAUTH, enabled: true } })).toMatchObject({
      oauthServerEnabled: true,
      oauthTokensAccepted: true,
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
        { path: '', message: 'unknown key(s): auth (auth is derived from mcp.auth, jwt and oauth: set those instead)' },
      ]);
  });

  it('a resolved config resolves to itself (the derived rules are not recomputed)', () => {
    const c = resolveConfig({ storage: { type: 'memory' } });
    expect(resolveConfig(c)).toBe(c);
  });
});
