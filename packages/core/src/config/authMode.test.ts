import { describe, expect, it } from 'vitest';
import { isLoopbackHost } from './authMode.js';
import { attributeToEnv } from './fromEnv.js';
import { checkConfig, resolveConfig } from './resolveConfig.js';

const SECRET = 'a-jwt-secret-of-at-least-32-bytes!!';
const OAUTH = { encryptionKey: 'k'.repeat(32), providerClientId: 'c', provider: { preset: 'github' as const } };

describe('cross-field rules in the schema', () => {
  it('knows loopback hosts', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', 'localhost', 'LOCALHOST', '::1', '[::1]']) expect(isLoopbackHost(h)).toBe(true);
    for (const h of ['0.0.0.0', '::', '192.168.1.2', 'example.com', '127.0.0.1.example.com']) expect(isLoopbackHost(h)).toBe(false);
  });

  it('refuses oauth.enabled without its pieces, with each key path', () => {
    const r = checkConfig({ oauth: { enabled: true } });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problems.map((p) => p.path).sort()).toEqual(['oauth.encryptionKey', 'oauth.provider', 'oauth.providerClientId']);
  });

  it('refuses an unauthenticated public bind unless the risk is accepted', () => {
    const r = checkConfig({ host: '0.0.0.0' });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problems[0]!.path).toBe('host');
    expect(checkConfig({ host: '0.0.0.0', allowUnauthenticatedRemote: true }).ok).toBe(true);
    expect(checkConfig({ host: '0.0.0.0', mcp: { auth: { authType: 'jwt' } }, jwt: { secret: SECRET } }).ok).toBe(true);
    expect(checkConfig({ host: '0.0.0.0', oauth: OAUTH }).ok).toBe(true);
  });

  it('decides whether a config serves without auth and runs the OAuth server', () => {
    expect(resolveConfig({}).auth.servesWithoutAuth).toBe(true); // authType oauth, nothing configured
    expect(resolveConfig({ oauth: OAUTH }).auth.oauthServer).toBe('running');
    expect(resolveConfig({ oauth: OAUTH }).auth.servesWithoutAuth).toBe(false);
    expect(resolveConfig({ oauth: { ...OAUTH, enabled: false } }).auth.oauthServer).toBe('off');
  });

  it('maps the spec key mcp.auth.oauth.sessionStorePath to a file session store, and refuses a conflicting one', () => {
    const c = resolveConfig({ mcp: { auth: { oauth: { sessionStorePath: '/var/lib/sessions' } } } });
    expect(c.oauth.sessionStorage).toMatchObject({ type: 'file', filePath: '/var/lib/sessions' });
    const r = checkConfig({ mcp: { auth: { oauth: { sessionStorePath: 'x' } } }, oauth: { sessionStorage: { type: 'redis' } } });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problems[0]!.path).toBe('mcp.auth.oauth.sessionStorePath');
  });

  it('names the environment variable that supplied a refused value', () => {
    const problems = [
      { path: 'oauth.encryptionKey', message: 'must be at least 32 characters' },
      { path: 'storage.redis.port', message: 'too big' },
      { path: 'jwt.secret', message: 'must be at least 32 bytes' },
    ];
    expect(attributeToEnv(problems, { OAUTH_ENCRYPTION_KEY: 'short', REDIS_URL: 'redis://h:99999' })).toEqual([
      { path: 'OAUTH_ENCRYPTION_KEY', message: 'must be at least 32 characters' },
      { path: 'REDIS_URL', message: 'too big' },
      { path: 'jwt.secret', message: 'must be at least 32 bytes' }, // from the file: keeps its key path
    ]);
  });
});
