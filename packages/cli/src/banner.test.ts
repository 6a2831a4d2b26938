import { resolveConfig } from '@ai-backend/core/internal';
import { describe, expect, it } from 'vitest';
import { banner } from './banner.js';

const addr = { url: 'http://127.0.0.1:3000', host: '127.0.0.1', port: 3000 };
const show = (input: Parameters<typeof resolveConfig>[0]) => banner(addr, resolveConfig(input), null);

describe('banner: why nobody can sign in', () => {
  it('names a missing jwt.secret and says how to set one', () => {
    const text = show({ mcp: { auth: { authType: 'jwt' } } });
    expect(text).toContain('jwt.secret is not set');
    expect(text).toContain('JWT_SECRET=');
  });

  it('names mcp.auth.jwt.enabled: false when the secret is set, and does not ask for a secret', () => {
    const text = show({ jwt: { secret: 's'.repeat(32) }, mcp: { auth: { authType: 'jwt', jwt: { enabled: false } } } });
    expect(text).toContain('mcp.auth.jwt.enabled is false');
    expect(text).not.toContain('jwt.secret is not set');
    expect(text).not.toContain('JWT_SECRET=');
  });

  it('says nothing about JWT when tokens can be verified', () => {
    expect(show({ jwt: { secret: 's'.repeat(32) }, mcp: { auth: { authType: 'jwt' } } })).not.toContain('nobody can sign in');
  });
});
