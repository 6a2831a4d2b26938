import { afterEach, describe, expect, it } from 'vitest';
import { checkConfig, configFromEnv } from '@ai-backend/core';
import { describeMatrix } from './helpers/describeMatrix.js';
import { serverFor } from './helpers/testServer.js';

/** The spec's nine CORS rules, against in-process fetch and a real listening server. */
describeMatrix('CORS', (mode) => {
  let stop: (() => Promise<void>) | undefined;
  afterEach(async () => stop?.());

  const preflight = (origin: string) => ({
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, mcp-session-id' },
  });

  // A loopback server refuses foreign origins before CORS (docs/security.md); these origins are let through.
  const letThrough = { mcp: { allowedOrigins: ['https://any.example'] } };

  it('rule 1/5: defaults to * without credentials; preflight is 200', async () => {
    const s = await serverFor(mode, letThrough);
    stop = s.stop;
    const res = await s.call('/rpc', preflight('https://any.example'));
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
  });

  it('rules 3/4: methods and headers, plus what MCP needs', async () => {
    const s = await serverFor(mode, letThrough);
    stop = s.stop;
    const res = await s.call('/mcp', preflight('https://any.example'));
    const methods = res.headers.get('access-control-allow-methods')!;
    for (const m of ['GET', 'POST', 'OPTIONS', 'HEAD', 'DELETE']) expect(methods).toContain(m);
    const headers = res.headers.get('access-control-allow-headers')!.toLowerCase();
    for (const h of [
      'content-type',
      'authorization',
      'x-requested-with',
      'mcp-protocol-version',
      'accept',
      'accept-language',
      'content-language',
      'origin',
      'mcp-session-id',
      'last-event-id',
    ]) {
      expect(headers).toContain(h);
    }
  });

  it('rules 2/6: a comma-separated list echoes only a matching origin, with credentials', async () => {
    const s = await serverFor(mode, { cors: { origin: 'https://a.example, https://b.example', credentials: true } });
    stop = s.stop;
    const ok = await s.call('/rpc', preflight('https://b.example'));
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://b.example');
    expect(ok.headers.get('access-control-allow-credentials')).toBe('true');
    // An origin outside an explicit list is refused outright (403), not merely left without headers.
    const no = await s.call('/rpc', preflight('https://evil.example'));
    expect(no.status).toBe(403);
    expect(no.headers.get('access-control-allow-origin')).toBeNull();
    const actual = await s.call('/health', { headers: { origin: 'https://a.example' } });
    expect(actual.headers.get('access-control-allow-origin')).toBe('https://a.example');
    expect(actual.headers.get('access-control-expose-headers')).toContain('Mcp-Session-Id');
    expect(actual.headers.get('access-control-expose-headers')).toContain('WWW-Authenticate');
    // A JSON-RPC answer carries them too (that handler adds them while building its response).
    const rpcAnswer = await s.call('/rpc', {
      method: 'POST',
      headers: { origin: 'https://b.example', 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'system.test', params: {} }),
    });
    expect(rpcAnswer.headers.get('access-control-allow-origin')).toBe('https://b.example');
    expect(rpcAnswer.headers.get('access-control-allow-credentials')).toBe('true');
    expect(rpcAnswer.headers.get('access-control-expose-headers')).toContain('Mcp-Session-Id');
    const denied = await s.call('/rpc', {
      method: 'POST',
      headers: { origin: 'https://evil.example', 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'system.test', params: {} }),
    });
    expect(denied.status).toBe(403);
    expect(denied.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('rule 9: the OAuth discovery path answers OPTIONS with * whatever the config', async () => {
    const s = await serverFor(mode, { cors: { origin: ['https://a.example'], credentials: true } });
    stop = s.stop;
    const res = await s.call('/.well-known/oauth-authorization-server', preflight('https://other.example'));
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-methods')).toBe('GET, POST, OPTIONS');
  });
});

describe('CORS configuration', () => {
  it('rule 7: credentials with * is a config error', () => {
    const r = checkConfig({ cors: { origin: '*', credentials: true } });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problems[0]!.path).toBe('cors.credentials');
  });

  it('rule 8: an origin function is refused', () => {
    const r = checkConfig({ cors: { origin: (() => true) as never } });
    expect(r.ok).toBe(false);
  });

  it('rule 2: CORS_ORIGIN is split on commas', () => {
    const r = checkConfig(configFromEnv({ CORS_ORIGIN: 'https://a.example,https://b.example' }));
    expect(r.ok && r.config.cors.origin).toEqual(['https://a.example', 'https://b.example']);
  });
});
