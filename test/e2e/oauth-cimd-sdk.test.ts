/**
 * A 2026-style sign-in with Client ID Metadata Documents, end to end: the official MCP SDK
 * client (which only uses an https `clientMetadataUrl`) against `ai-backend serve` (the built
 * CLI, spawned), with panva's oidc-provider as the identity provider. The client's metadata
 * document is served over https with a certificate made for this test; the server trusts it
 * through NODE_EXTRA_CA_CERTS and, since the document host is on loopback, is configured with
 * `clientIdMetadataDocuments.allowPrivateNetwork` (production refuses loopback).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpsServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completeSignIn, IDP_CLIENT_ID, IDP_CLIENT_SECRET, MemoryOAuthProvider, startIdp, type TestIdp } from './oauthHelpers.js';

const BIN = fileURLToPath(new URL('../../packages/cli/bin/ai-backend.js', import.meta.url));
const REDIRECT = 'http://127.0.0.1:8978/callback';

/** An SDK client identified by the URL of its metadata document instead of a registration. */
class CimdProvider extends MemoryOAuthProvider {
  constructor(
    redirect: string,
    readonly clientMetadataUrl: string,
  ) {
    super(redirect);
  }
}

let dir: string;
let idp: TestIdp;
let docs: Server;
let docUrl = '';
let docHits = 0;
let child: ChildProcess | undefined;
let base = '';
let output = '';

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'aib-cimd-sdk-'));
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  docs = createHttpsServer({ key: await readFile(key), cert: await readFile(cert) }, (req, res) => {
    if (req.url !== '/oauth/client.json') return void res.writeHead(404).end();
    docHits++;
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=60' });
    res.end(
      JSON.stringify({
        client_id: docUrl,
        client_name: 'SDK CIMD client',
        redirect_uris: [REDIRECT],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      }),
    );
  });
  await new Promise<void>((r) => docs.listen(0, '127.0.0.1', r));
  docUrl = `https://127.0.0.1:${(docs.address() as AddressInfo).port}/oauth/client.json`;

  idp = await startIdp();
  const config = {
    host: '127.0.0.1',
    port: 0,
    storage: { type: 'memory' },
    mcp: { auth: { authType: 'oauth' } },
    oauth: {
      encryptionKey: 'cimd-sdk-encryption-key-0123456789abcdef',
      providerClientId: IDP_CLIENT_ID,
      providerClientSecret: IDP_CLIENT_SECRET,
      provider: { issuer: idp.issuer },
      clientIdMetadataDocuments: { allowPrivateNetwork: true },
    },
  };
  await writeFile(path.join(dir, 'ai-backend.config.json'), JSON.stringify(config));
  child = spawn(process.execPath, [BIN, 'serve', '--config', 'ai-backend.config.json'], {
    cwd: dir,
    env: { PATH: process.env.PATH!, LOG_LEVEL: 'warn', NODE_EXTRA_CA_CERTS: cert },
  });
  base = await new Promise<string>((resolve, reject) => {
    const onData = (d: Buffer) => {
      output += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(output);
      if (m) resolve(m[1]!.replace(/\/$/, ''));
    };
    child!.stdout!.on('data', onData);
    child!.stderr!.on('data', onData);
    child!.once('exit', (code) => reject(new Error(`serve exited ${code}: ${output}`)));
  });
  idp.configure(`${base}/oauth/callback`);
}, 60_000);

afterAll(async () => {
  child?.kill('SIGTERM');
  await idp?.close();
  await new Promise<void>((r) => (docs ? docs.close(() => r()) : r()));
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('Client ID Metadata Documents with the MCP SDK client against ai-backend serve', () => {
  it('401 → discovery → URL client_id (no registration) → consent → login → code with iss → token → tool', async () => {
    const meta = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    expect(meta.client_id_metadata_document_supported).toBe(true);

    const provider = new CimdProvider(REDIRECT, docUrl);
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
    const client = new Client({ name: 'cimd-sdk', version: '1.0.0' });
    await client.connect(transport);
    try {
      await expect(client.callTool({ name: 'greeting', arguments: { name: 'Ada' } })).rejects.toBeInstanceOf(UnauthorizedError);
      // The SDK chose the metadata document over registration because we advertise support.
      expect(provider.info?.client_id).toBe(docUrl);
      expect((provider.info as { client_secret?: string }).client_secret).toBeUndefined();
      const authUrl = provider.authorizationUrl!;
      expect(authUrl.searchParams.get('client_id')).toBe(docUrl);

      const { redirect, consentHtml } = await completeSignIn(authUrl.href, 'alice');
      expect(consentHtml).toContain('SDK CIMD client');
      expect(consentHtml).toContain(`id="client-host">${new URL(docUrl).host}<`);
      expect(consentHtml).toContain('id="localhost-warning"');
      expect(redirect.searchParams.get('iss')).toBe(meta.issuer);
      expect(docHits).toBeGreaterThanOrEqual(1);

      await transport.finishAuth(redirect.searchParams.get('code')!);
      const result = await client.callTool({ name: 'greeting', arguments: { name: 'Ada' } });
      expect(result.isError ?? false).toBe(false);
      expect(JSON.stringify(result.content)).toContain('Hello, Ada!');
      const claims = JSON.parse(Buffer.from(provider.saved!.access_token.split('.')[1]!, 'base64url').toString()) as Record<
        string,
        unknown
      >;
      expect(claims).toMatchObject({ client_id: docUrl, aud: `${base}/mcp`, iss: meta.issuer });
      expect(provider.saved!.refresh_token).toBeTruthy();
      // Cached per its Cache-Control: the token request did not fetch the document again.
      expect(docHits).toBe(1);
    } finally {
      await client.close();
    }
  }, 60_000);
});
