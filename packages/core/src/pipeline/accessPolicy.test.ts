import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../config/resolveConfig.js';
import type { ConfigInput } from '../config/schema.js';
import type { Identity } from '../kernel/identity.js';
import type { ProcedureMeta } from './meta.js';
import { accessDecision } from './accessPolicy.js';

const user: Identity = { sub: 'u', scopes: [], isAdmin: false, via: 'jwt' };
const admin: Identity = { ...user, sub: 'a', isAdmin: true };
type Input = NonNullable<ConfigInput>;
const cfg = (auth: NonNullable<NonNullable<Input['mcp']>['auth']>, extra: Input = {}) =>
  resolveConfig({ jwt: { secret: 'x'.repeat(32) }, ...extra, mcp: { ...extra.mcp, auth } });
const decide = (c: ReturnType<typeof cfg>, meta: ProcedureMeta | undefined, who: Identity | null, path = 'ns.proc') => {
  const d = accessDecision(c, path, meta, who);
  return d.allowed ? 'allowed' : d.code;
};

describe('accessDecision', () => {
  it('admin and user procedures whatever the auth type', () => {
    for (const authType of ['none', 'jwt'] as const) {
      const c = cfg({ authType });
      expect([decide(c, { access: 'admin' }, null), decide(c, { access: 'admin' }, user), decide(c, { access: 'admin' }, admin)]).toEqual([
        'UNAUTHORIZED',
        'FORBIDDEN',
        'allowed',
      ]);
      expect([decide(c, { access: 'user' }, null), decide(c, { access: 'user' }, user)]).toEqual(['UNAUTHORIZED', 'allowed']);
    }
  });

  it('writes are never anonymous with authentication, whatever the tool rules and enforcement say', () => {
    const lifted = cfg(
      { authType: 'jwt', requireAuthForToolsCall: false, publicTools: ['w'] },
      { mcp: { authEnforcement: { enabled: true, requireAuth: false } } },
    );
    expect(decide(lifted, { writes: true, mcp: { name: 'w', public: true } }, null)).toBe('UNAUTHORIZED');
    expect(decide(lifted, { writes: true }, user)).toBe('allowed');
    expect(decide(cfg({ authType: 'none' }), { writes: true }, null)).toBe('allowed');
  });

  it('MCP-published procedures follow requireAuthForToolsCall and publicTools; others are open', () => {
    const c = cfg({ authType: 'oauth', publicTools: ['open'] });
    expect(decide(c, { mcp: {} }, null, 'ns.closed')).toBe('UNAUTHORIZED');
    expect(decide(c, { mcp: {} }, null, 'ns.open')).toBe('allowed');
    expect(decide(c, { mcp: { public: true } }, null)).toBe('allowed');
    expect(decide(c, { description: 'not on MCP' }, null)).toBe('allowed');
    expect(decide(cfg({ authType: 'oauth', requireAuthForToolsCall: false }), { mcp: {} }, null)).toBe('allowed');
  });

  it('our OAuth tokens run procedures only with the call scope; the admin scope implies it; other identities are not scope-checked', () => {
    const c = cfg({ authType: 'oauth' });
    const oauthUser = (scopes: string[], isAdmin = false): Identity => ({ sub: 'o', scopes, isAdmin, via: 'oauth' });
    const d = accessDecision(c, 'ns.proc', { mcp: {} }, oauthUser(['mcp']));
    expect(d).toMatchObject({ allowed: false, code: 'INSUFFICIENT_SCOPE', rule: 'scope', requiredScopes: ['mcp:call'] });
    expect(decide(c, { access: 'user' }, oauthUser(['mcp']))).toBe('INSUFFICIENT_SCOPE');
    expect(decide(c, { access: 'admin' }, oauthUser(['mcp'], true))).toBe('INSUFFICIENT_SCOPE');
    expect(decide(c, { access: 'admin' }, oauthUser(['mcp'], false))).toBe('FORBIDDEN');
    expect(decide(c, { mcp: {} }, oauthUser(['mcp', 'mcp:call']))).toBe('allowed');
    expect(decide(c, { mcp: {} }, oauthUser(['mcp:admin'], true))).toBe('allowed');
    expect(decide(c, { mcp: {} }, { sub: 'j', scopes: [], isAdmin: false, via: 'jwt' })).toBe('allowed');
    expect(decide(c, { mcp: {} }, { sub: 'k', scopes: [], isAdmin: false, via: 'apiKey' })).toBe('allowed');
    // Off when set to null, or when clients cannot get the scope at all.
    expect(decide(cfg({ authType: 'oauth' }, { oauth: { callScope: null } }), { mcp: {} }, oauthUser([]))).toBe('allowed');
    expect(decide(cfg({ authType: 'oauth' }, { oauth: { scopesSupported: ['files:read'] } }), { mcp: {} }, oauthUser(['files:read']))).toBe(
      'allowed',
    );
    expect(
      decide(
        cfg({ authType: 'oauth' }, { oauth: { scopesSupported: ['files:read', 'files:run'], callScope: 'files:run' } }),
        { mcp: {} },
        oauthUser(['files:read']),
      ),
    ).toBe('INSUFFICIENT_SCOPE');
  });

  it("a key's tools rule names an MCP tool only for a procedure published as that tool, never a procedure's last segment", () => {
    const c = cfg({ authType: 'jwt' });
    const key = (tools: string[], isAdmin = false): Identity => ({
      sub: 'owner',
      scopes: [],
      isAdmin,
      via: 'apiKey',
      apiKey: { id: 'k1', tools },
    });
    // The MCP tool `forecast` (weather.forecast) and a procedure off MCP whose path ends the same way.
    expect(decide(c, { keyAccess: 'any', mcp: {} }, key(['forecast']), 'weather.forecast')).toBe('allowed');
    expect(decide(c, { keyAccess: 'any' }, key(['forecast']), 'ops.forecast')).toBe('FORBIDDEN');
    expect(decide(c, { keyAccess: 'any' }, key(['ops.forecast']), 'ops.forecast')).toBe('allowed');
    // The built-in case: an administrator key admitted to the MCP tool getBudget (its owner's budget)
    // does not reach admin.getBudget (any user's), nor does a glob over tool names reach keys.get.
    expect(decide(c, { access: 'admin', keyAccess: 'any' }, key(['getBudget'], true), 'admin.getBudget')).toBe('FORBIDDEN');
    expect(decide(c, { access: 'user', keyAccess: 'any', mcp: {} }, key(['getBudget'], true), 'billing.getBudget')).toBe('allowed');
    expect(decide(c, { access: 'user', keyAccess: 'any' }, key(['get*']), 'keys.get')).toBe('FORBIDDEN');
  });
});
