import { describe, expect, it } from 'vitest';
import { ConfigError, checkConfig, configFromEnv, mergeConfig, resolveConfig, redactConfig } from '@ai-backend/core';
import { createServer } from '@ai-backend/transports';

describe('config', () => {
  it('holds the spec defaults without a config file', () => {
    const c = resolveConfig({});
    expect(c.mcp.auth.authType).toBe('oauth');
    expect(c.mcp.auth.requireAuthForToolsList).toBe(false);
    expect(c.mcp.auth.requireAuthForToolsCall).toBe(true);
    expect(c.mcp.auth.jwt.allowExpiredTokens).toBe(false);
    expect(c.protocols.jsonRpc).toBe(true);
    expect(c.transports.http).toBe(true);
    expect(c.host).toBe('127.0.0.1');
    expect(c.cors).toEqual({ origin: ['*'], credentials: false });
  });

  it('reports every problem with its path, including unknown keys', () => {
    const r = checkConfig({ oauth: { encryptionKey: 'short' }, jwt: { secret: 'tiny' }, prot: {}, mcp: { auth: { authType: 'basic' } } });
    expect(r.ok).toBe(false);
    const paths = !r.ok ? r.problems.map((p) => `${p.path}: ${p.message}`) : [];
    expect(paths).toContain('oauth.encryptionKey: must be at least 32 characters');
    expect(paths.some((p) => p.startsWith('jwt.secret:'))).toBe(true);
    expect(paths.some((p) => p.includes('unknown key(s): prot'))).toBe(true);
    expect(paths.some((p) => p.startsWith('mcp.auth.authType:'))).toBe(true);
  });

  it('accepts workspace ids directly under serverWorkspaces and in additionalWorkspaces', () => {
    const c = resolveConfig({
      serverWorkspaces: { docs: { path: '/srv/docs' }, additionalWorkspaces: { src: { path: '/srv/src', readOnly: true } } },
    });
    expect(Object.keys(c.serverWorkspaces.workspaces).sort()).toEqual(['docs', 'src']);
    expect(c.serverWorkspaces.workspaces.src!.readOnly).toBe(true);
  });

  it('lets the environment override the file', () => {
    const merged = mergeConfig(
      { port: 1, jwt: { issuer: 'file' } },
      configFromEnv({ PORT: '9', JWT_SECRET: 's'.repeat(32), LOG_LEVEL: 'debug' }),
    );
    const c = resolveConfig(merged);
    expect(c.port).toBe(9);
    expect(c.jwt.issuer).toBe('file');
    expect(c.jwt.secret).toBe('s'.repeat(32));
    expect(c.monitoring.logging.level).toBe('debug');
  });

  it('redacts secrets', () => {
    const c = resolveConfig({ jwt: { secret: 'x'.repeat(40) }, oauth: { encryptionKey: 'k'.repeat(40), providerClientSecret: 'cs' } });
    const text = JSON.stringify(redactConfig(c));
    expect(text).not.toContain('x'.repeat(40));
    expect(text).not.toContain('k'.repeat(40));
    expect(text).not.toContain('"cs"');
  });

  it('refuses an unauthenticated server on a non-loopback address unless opted in', () => {
    expect(() => createServer({ host: '0.0.0.0', mcp: { auth: { authType: 'none' } } })).toThrow(ConfigError);
    expect(() => createServer({ host: '0.0.0.0' })).toThrow(/refusing to serve without authentication/);
    const ok = createServer({
      host: '0.0.0.0',
      mcp: { auth: { authType: 'none' } },
      allowUnauthenticatedRemote: true,
      storage: { type: 'memory' },
    });
    expect(ok.config.host).toBe('0.0.0.0');
    const jwt = createServer({
      host: '0.0.0.0',
      mcp: { auth: { authType: 'jwt' } },
      jwt: { secret: 'z'.repeat(32) },
      storage: { type: 'memory' },
    });
    expect(jwt.config.mcp.auth.authType).toBe('jwt');
    return Promise.all([ok.stop(), jwt.stop()]);
  });
});
