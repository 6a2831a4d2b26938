import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discoverUpstreamAuth } from './oauthDiscovery.js';

/**
 * Discovery against a real HTTP server on 127.0.0.1 whose documents each case sets: the 401
 * challenge, the well-known fallbacks, and the checks that refuse metadata we must not trust.
 */
type Routes = Record<string, { status?: number; body?: unknown; headers?: Record<string, string> }>;
let routes: Routes = {};
let server: Server;
let base = '';
const net = { allowPrivateNetwork: true, timeoutMs: 5000 };

beforeAll(async () => {
  server = createServer((req, res) => {
    const r = routes[`${req.method} ${req.url}`];
    if (!r) return void res.writeHead(404).end();
    res
      .writeHead(r.status ?? 200, { 'content-type': 'application/json', ...r.headers })
      .end(r.body === undefined ? '' : JSON.stringify(r.body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const asDoc = (over: Record<string, unknown> = {}) => ({
  issuer: `${base}/as`,
  authorization_endpoint: `${base}/as/authorize`,
  token_endpoint: `${base}/as/token`,
  code_challenge_methods_supported: ['S256'],
  ...over,
});

describe('discoverUpstreamAuth', () => {
  it('follows the 401 challenge to the protected resource metadata and the path-aware AS metadata', async () => {
    routes = {
      'POST /mcp': {
        status: 401,
        headers: { 'www-authenticate': `Bearer error="invalid_token", resource_metadata="${base}/prm-here", scope="read write"` },
      },
      'GET /prm-here': { body: { resource: `${base}/mcp`, authorization_servers: [`${base}/as`] } },
      'GET /.well-known/oauth-authorization-server/as': { body: asDoc() },
    };
    const found = await discoverUpstreamAuth(`${base}/mcp`, net);
    expect(found).toMatchObject({
      resource: `${base}/mcp`,
      scopes: ['read', 'write'],
      as: { issuer: `${base}/as`, token_endpoint: `${base}/as/token` },
    });
  });

  it('without a challenge, reads the well-known metadata and then OpenID discovery', async () => {
    routes = {
      'POST /mcp': { status: 200, body: {} },
      'GET /.well-known/oauth-protected-resource/mcp': {
        body: { resource: `${base}/mcp`, authorization_servers: [`${base}/as`], scopes_supported: ['tools'] },
      },
      'GET /.well-known/openid-configuration/as': { body: asDoc() },
    };
    expect(await discoverUpstreamAuth(`${base}/mcp`, net)).toMatchObject({ resource: `${base}/mcp`, scopes: ['tools'] });
  });

  it('without protected resource metadata, the server itself is the authorization server (MCP 2025-03-26)', async () => {
    routes = { 'GET /.well-known/oauth-authorization-server': { body: asDoc({ issuer: base }) } };
    expect(await discoverUpstreamAuth(`${base}/mcp`, net)).toMatchObject({ resource: `${base}/mcp`, as: { issuer: base } });
  });

  it('refuses metadata for another resource, another issuer, or without S256', async () => {
    routes = {
      'GET /.well-known/oauth-protected-resource/mcp': { body: { resource: `${base}/other`, authorization_servers: [`${base}/as`] } },
    };
    await expect(discoverUpstreamAuth(`${base}/mcp`, net)).rejects.toThrow(/is for .*\/other/);
    routes = {
      'GET /.well-known/oauth-protected-resource/mcp': { body: { resource: `${base}/mcp`, authorization_servers: [`${base}/as`] } },
      'GET /.well-known/oauth-authorization-server/as': { body: asDoc({ issuer: 'https://evil.example' }) },
    };
    await expect(discoverUpstreamAuth(`${base}/mcp`, net)).rejects.toThrow(/names another issuer/);
    routes['GET /.well-known/oauth-authorization-server/as'] = { body: asDoc({ code_challenge_methods_supported: ['plain'] }) };
    await expect(discoverUpstreamAuth(`${base}/mcp`, net)).rejects.toThrow(/PKCE S256/);
  });

  it('refuses endpoints that are not http(s) URLs: the authorization URL is opened by our users (a javascript:, file: or custom scheme would run there)', async () => {
    routes = {
      'GET /.well-known/oauth-protected-resource/mcp': { body: { resource: `${base}/mcp`, authorization_servers: [`${base}/as`] } },
    };
    for (const [field, value] of [
      ['authorization_endpoint', 'javascript:alert(document.cookie)//'],
      ['authorization_endpoint', 'file:///etc/passwd'],
      ['authorization_endpoint', 'vscode://evil/x'],
      ['authorization_endpoint', 'not a url'],
      ['authorization_endpoint', 'https://user:pw@auth.example/authorize'],
      ['token_endpoint', 'data:text/plain,x'],
      ['revocation_endpoint', 'ftp://auth.example/revoke'],
      ['registration_endpoint', 'javascript:x'],
    ] as const) {
      routes['GET /.well-known/oauth-authorization-server/as'] = { body: asDoc({ [field]: value }) };
      await expect(discoverUpstreamAuth(`${base}/mcp`, net), `${field}: ${value}`).rejects.toThrow(
        new RegExp(`${field} .*not an https URL`),
      );
    }
    // Plain http only where private networks are allowed (development): the same rule as every other request of the flow.
    routes['GET /.well-known/oauth-authorization-server/as'] = { body: asDoc({ authorization_endpoint: 'http://auth.example/authorize' }) };
    expect(await discoverUpstreamAuth(`${base}/mcp`, net)).toMatchObject({
      as: { authorization_endpoint: 'http://auth.example/authorize' },
    });
  });

  it('refuses loopback addresses unless the server allows private networks', async () => {
    routes = {};
    await expect(discoverUpstreamAuth(`${base}/mcp`, { allowPrivateNetwork: false, timeoutMs: 5000 })).rejects.toMatchObject({
      appCode: 'FORBIDDEN',
    });
  });
});
