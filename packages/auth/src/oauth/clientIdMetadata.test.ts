import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authorizeUrl, form, openConsent, pkce, REDIRECT, signIn, startHarness, type Harness } from './__tests__/harness.js';
import { cacheSeconds, clientIdUrlProblem } from './clientIdMetadata.js';

/** A client's web host: serves metadata documents, counting fetches per path. */
let docs: Server;
let origin = '';
const served = new Map<string, { body: string; headers?: Record<string, string> }>();
const hits = new Map<string, number>();

beforeAll(async () => {
  docs = createServer((req, res) => {
    hits.set(req.url!, (hits.get(req.url!) ?? 0) + 1);
    const doc = served.get(req.url!);
    if (!doc) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json', ...doc.headers }).end(doc.body);
  });
  await new Promise<void>((r) => docs.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(docs.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => docs.close(() => r())));

/** Publish a document at `path` whose client_id is its own URL unless overridden. */
function publish(path: string, doc: Record<string, unknown> = {}, headers?: Record<string, string>): string {
  const url = `${origin}${path}`;
  served.set(path, {
    body: JSON.stringify({
      client_id: url,
      client_name: 'Doc Client',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      ...doc,
    }),
    headers,
  });
  return url;
}

// The document host is on loopback, so these tests allow what production refuses.
const devCimd = { oauth: { clientIdMetadataDocuments: { allowPrivateNetwork: true, allowHttp: true } } };

describe('Client ID Metadata Documents', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(devCimd);
  });
  afterAll(() => h.close());

  it('is advertised in the authorization server metadata', async () => {
    const meta = (await (await h.request('/.well-known/oauth-authorization-server')).json()) as Record<string, unknown>;
    expect(meta.client_id_metadata_document_supported).toBe(true);
  });

  it('a URL client_id signs in without registration: consent names its host, tokens name the URL', async () => {
    const clientId = publish('/apps/one.json', { client_uri: 'https://one.example' });
    const { challenge, verifier } = pkce();
    const consent = await openConsent(h, authorizeUrl(clientId, challenge));
    expect(consent.res.status).toBe(200);
    expect(consent.html).toContain('Doc Client');
    expect(consent.html).toContain(`id="client-host">127.0.0.1:${new URL(origin).port}<`);
    expect(consent.html).toContain('id="redirect-host">127.0.0.1:7777<');
    // Its only redirect is on loopback: the page warns that anything local can claim it.
    expect(consent.html).toContain('id="localhost-warning"');

    const { code, location } = await signIn(h, clientId, challenge);
    expect(location.searchParams.get('iss')).toBe('http://auth.test');
    const res = await h.request(
      '/oauth/token',
      form({ grant_type: 'authorization_code', code: code!, redirect_uri: REDIRECT, code_verifier: verifier, client_id: clientId }),
    );
    expect(res.status).toBe(200);
    const tokens = (await res.json()) as { access_token: string; refresh_token?: string };
    expect(decodeJwt(tokens.access_token).client_id).toBe(clientId);
    expect(tokens.refresh_token).toBeTruthy();
    const identity = await h.oauth.verifyAccessToken(tokens.access_token, { resource: 'http://auth.test/mcp' });
    expect(identity?.clientId).toBe(clientId);
    // Nothing was registered on its behalf.
    expect(await h.storage.keys('oauth:client:')).toEqual([]);

    // Refresh works for a document client that lists refresh_token.
    const refreshed = await h.request(
      '/oauth/token',
      form({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: clientId }),
    );
    expect(refreshed.status).toBe(200);
  });

  it('refuses documents that do not describe the URL, or list other redirects, secrets or missing fields', async () => {
    const { challenge } = pkce();
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['/bad/other-id.json', { client_id: 'https://evil.example/client.json' }, /differs from its URL/],
      ['/bad/secret.json', { client_secret: 'shh' }, /must not contain a client secret/],
      ['/bad/basic.json', { token_endpoint_auth_method: 'client_secret_basic' }, /token_endpoint_auth_method/],
      ['/bad/noname.json', { client_name: undefined }, /client_name/],
      ['/bad/noredirects.json', { redirect_uris: [] }, /redirect_uris/],
      ['/bad/httpredirect.json', { redirect_uris: ['http://evil.example/cb'] }, /bad redirect URI/],
      ['/bad/jsredirect.json', { redirect_uris: ['javascript:alert(1)//'] }, /bad redirect URI/],
      ['/bad/jsclienturi.json', { client_uri: 'javascript:alert(document.domain)' }, /client_uri: must be an http\(s\) URL/],
      ['/bad/datalogo.json', { logo_uri: 'data:image/svg+xml,x' }, /logo_uri: must be an http\(s\) URL/],
    ];
    for (const [path, doc, message] of cases) {
      const id = publish(path, doc);
      const res = await h.request(authorizeUrl(id, challenge));
      expect(res.status, path).toBe(400);
      expect(await res.text(), path).toMatch(message);
    }
    // A redirect the document does not list is refused, without redirecting there.
    const ok = publish('/apps/two.json');
    const res = await h.request(authorizeUrl(ok, challenge, { redirect_uri: 'https://attacker.example/cb' }));
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    // Missing documents and non-JSON.
    expect((await h.request(authorizeUrl(`${origin}/missing.json`, challenge))).status).toBe(400);
    served.set('/notjson.json', { body: '<html>' });
    expect(await (await h.request(authorizeUrl(`${origin}/notjson.json`, challenge))).text()).toMatch(/not valid JSON/);
  });

  it('bounds the document size', async () => {
    const id = publish('/big.json', { client_name: 'x'.repeat(150), software_id: 'y'.repeat(150), padding: 'z'.repeat(6000) });
    const res = await h.request(authorizeUrl(id, pkce().challenge));
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/larger than 5120 bytes/);
  });

  it('caches documents as their Cache-Control says', async () => {
    const cached = publish('/cache/long.json', {}, { 'cache-control': 'max-age=600' });
    const fresh = publish('/cache/nostore.json', {}, { 'cache-control': 'no-store' });
    for (let i = 0; i < 3; i++) {
      expect((await h.request(authorizeUrl(cached, pkce().challenge))).status).toBe(200);
      expect((await h.request(authorizeUrl(fresh, pkce().challenge))).status).toBe(200);
    }
    expect(hits.get('/cache/long.json')).toBe(1);
    expect(hits.get('/cache/nostore.json')).toBe(3);
  });

  it('an unusable document is not fetched again for a while (no fetch amplification)', async () => {
    for (let i = 0; i < 3; i++) expect((await h.request(authorizeUrl(`${origin}/gone.json`, pkce().challenge))).status).toBe(400);
    expect(hits.get('/gone.json')).toBe(1);
  });

  it('at the token endpoint an unusable document is invalid_client', async () => {
    const res = await h.request(
      '/oauth/token',
      form({
        grant_type: 'authorization_code',
        code: 'x',
        redirect_uri: REDIRECT,
        code_verifier: 'v'.repeat(43),
        client_id: `${origin}/missing-too.json`,
      }),
    );
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: 'invalid_client' });
  });
});

describe('Client ID Metadata Documents: secure defaults', () => {
  it('never fetches loopback or private addresses, nor http, unless told to', async () => {
    const h = await startHarness();
    try {
      const id = publish('/apps/local.json');
      const res = await h.request(authorizeUrl(id, pkce().challenge));
      expect(res.status).toBe(400);
      expect(await res.text()).toMatch(/must use https/);
      const before = hits.get('/apps/local.json') ?? 0;
      const viaHttpsLoopback = await h.request(authorizeUrl('https://127.0.0.1:8443/client.json', pkce().challenge));
      expect(await viaHttpsLoopback.text()).toMatch(/non-public addresses/);
      const viaName = await h.request(authorizeUrl('https://localhost:8443/client.json', pkce().challenge));
      expect(await viaName.text()).toMatch(/non-public address/);
      expect(hits.get('/apps/local.json') ?? 0).toBe(before);
    } finally {
      await h.close();
    }
  });

  it('can be turned off, and a trust policy limits hosts', async () => {
    const off = await startHarness({ oauth: { clientIdMetadataDocuments: { enabled: false } } });
    try {
      const meta = (await (await off.request('/.well-known/oauth-authorization-server')).json()) as Record<string, unknown>;
      expect(meta.client_id_metadata_document_supported).toBe(false);
      expect(await (await off.request(authorizeUrl('https://app.example/client.json', pkce().challenge))).text()).toMatch(
        /not accepted here/,
      );
    } finally {
      await off.close();
    }
    const settings = {
      enabled: true,
      maxBytes: 5120,
      timeoutMs: 5000,
      cacheTtlSec: 300,
      maxCacheTtlSec: 86400,
      allowPrivateNetwork: false,
      allowHttp: false,
      allowedHosts: ['*.trusted.example', 'app.example'],
    };
    expect(clientIdUrlProblem('https://a.trusted.example/c.json', settings)).toBeNull();
    expect(clientIdUrlProblem('https://app.example/c.json', settings)).toBeNull();
    expect(clientIdUrlProblem('https://evil.example/c.json', settings)).toMatch(/not trusted/);
    expect(clientIdUrlProblem('https://trusted.example.evil.example/c.json', settings)).toMatch(/not trusted/);
  });

  it('accepts only https URLs with a path and no fragment, credentials or dot segments', () => {
    const s = {
      enabled: true,
      maxBytes: 5120,
      timeoutMs: 5000,
      cacheTtlSec: 300,
      maxCacheTtlSec: 86400,
      allowPrivateNetwork: false,
      allowHttp: false,
    };
    expect(clientIdUrlProblem('https://app.example/client.json', s)).toBeNull();
    expect(clientIdUrlProblem('https://app.example/', s)).toMatch(/path/);
    expect(clientIdUrlProblem('https://app.example', s)).toMatch(/path/);
    expect(clientIdUrlProblem('https://app.example/c.json#x', s)).toMatch(/fragment/);
    expect(clientIdUrlProblem('https://u:p@app.example/c.json', s)).toMatch(/credentials/);
    expect(clientIdUrlProblem('https://app.example/a/../c.json', s)).toMatch(/dot segments/);
    expect(clientIdUrlProblem('https://app.example/a/%2e%2e/c.json', s)).toMatch(/dot segments/);
    expect(clientIdUrlProblem('http://app.example/c.json', s)).toMatch(/https/);
  });

  it('reads max-age and no-store from Cache-Control', () => {
    expect(cacheSeconds('public, max-age=600')).toBe(600);
    expect(cacheSeconds('no-store')).toBe(0);
    expect(cacheSeconds('max-age=60, no-cache')).toBe(0);
    expect(cacheSeconds(null)).toBeUndefined();
    expect(cacheSeconds('public')).toBeUndefined();
  });
});
