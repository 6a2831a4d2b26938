import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../config/resolveConfig.js';
import type { ConfigInput } from '../config/schema.js';
import { signInScopes } from './requestScope.js';

type Input = NonNullable<ConfigInput>;
const secret = 'x'.repeat(32);
const oauth = {
  encryptionKey: 'k'.repeat(32),
  providerClientId: 'client',
  provider: { issuer: 'https://idp.example' },
  scopesSupported: ['openid', 'mcp:tools', 'offline_access'],
};
const scopes = (input: Input) => signInScopes(resolveConfig(input));

describe('signInScopes (the scopes a 401 challenge asks for)', () => {
  it("asks for the OAuth server's scopes, never offline_access, where OAuth tokens are verified", () => {
    for (const authType of ['oauth', 'both'] as const) {
      const got = scopes({ jwt: { secret }, oauth, mcp: { auth: { authType } } });
      expect(got).toContain('mcp:tools');
      expect(got).not.toContain('offline_access');
    }
  });

  it("follows the verified tokens, not the auth type: 'both' without an OAuth server asks for the JWT scopes", () => {
    const jwtScopes = { requiredScopes: ['mcp:jwt-only'] };
    const both = resolveConfig({ jwt: { secret }, mcp: { auth: { authType: 'both', jwt: jwtScopes } } });
    expect(both.auth.verifiers).toBe('jwt');
    expect(signInScopes(both)).toEqual(['mcp:jwt-only']);
    expect(scopes({ jwt: { secret }, mcp: { auth: { authType: 'jwt', jwt: jwtScopes } } })).toEqual(['mcp:jwt-only']);
  });

  it('asks for nothing where no token is verified', () => {
    expect(scopes({ mcp: { auth: { authType: 'none' } } })).toEqual([]);
    expect(scopes({ mcp: { auth: { authType: 'jwt' } } })).toEqual([]);
  });
});
