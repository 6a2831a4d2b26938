import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../config/resolveConfig.js';
import type { ConfigInput } from '../config/schema.js';
import type { Identity } from '../trpc/context.js';
import type { ProcedureMeta } from '../trpc/meta.js';
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
      expect([decide(c, { access: 'admin' }, null), decide(c, { access: 'admin' }, user), decide(c, { access: 'admin' }, admin)]).toEqual(['UNAUTHORIZED', 'FORBIDDEN', 'allowed']);
      expect([decide(c, { access: 'user' }, null), decide(c, { access: 'user' }, user)]).toEqual(['UNAUTHORIZED', 'allowed']);
    }
  });

  it('writes are never anonymous with authentication, whatever the tool rules and enforcement say', () => {
    const lifted = cfg({ authType: 'jwt', requireAuthForToolsCall: false, publicTools: ['w'] }, { mcp: { authEnforcement: { enabled: true, requireAuth: false } } });
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
});
