/**
 * The same sign-in in a real browser: Debian's Chromium driven by playwright-core through our
 * consent page and the identity provider's login and consent pages. Screenshots are kept under
 * test-results/oauth-browser/ as artefacts.
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { protectedProcedure, router } from '@ai-backend/core';
import { createServer, type AiBackendServer } from '@ai-backend/transports';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { chromium, type Browser } from 'playwright-core';
import { testService } from '@ai-backend/test-utils/services';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDP_CLIENT_ID, IDP_CLIENT_SECRET, MemoryOAuthProvider, startIdp, type TestIdp } from './oauthHelpers.js';

// Debian's /usr/bin/chromium (or AI_BACKEND_TEST_CHROMIUM); without it the suite skips and the run
// ends with a line saying so (CI installs it and fails instead of skipping).
const chromiumService = await testService('chromium');
const CHROMIUM = chromiumService.path ?? '/usr/bin/chromium';
const ARTEFACTS = join(process.cwd(), 'test-results', 'oauth-browser');
const CLIENT_REDIRECT = 'http://127.0.0.1:8977/callback';

const whoami = router({
  whoami: protectedProcedure
    .meta({ description: 'Who is calling', mcp: {} })
    .query(({ ctx }) => ({ sub: ctx.identity.sub, email: ctx.identity.email ?? null })),
});

let idp: TestIdp;
let server: AiBackendServer;
let browser: Browser;
let base: string;

describe.skipIf(!chromiumService.ok)('OAuth sign-in in Chromium', () => {
  beforeAll(async () => {
    idp = await startIdp();
    server = createServer({
      host: '127.0.0.1',
      port: 0,
      storage: { type: 'memory' },
      monitoring: { logging: { level: 'silent' } },
      customRouters: { e2e: whoami },
      oauth: {
        encryptionKey: 'browser-e2e-encryption-key-0123456789',
        providerClientId: IDP_CLIENT_ID,
        providerClientSecret: IDP_CLIENT_SECRET,
        provider: { issuer: idp.issuer },
      },
    });
    base = (await server.start()).url;
    idp.configure(`${base}/oauth/callback`);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        '--disable-quic',
      ],
    });
    await mkdir(ARTEFACTS, { recursive: true });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await idp?.close();
  });

  it('approves our consent page, signs in at the provider and calls a protected tool', async () => {
    const provider = new MemoryOAuthProvider(CLIENT_REDIRECT);
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
    const client = new Client({ name: 'browser-e2e', version: '1.0.0' });
    await client.connect(transport);
    await expect(client.callTool({ name: 'whoami', arguments: {} })).rejects.toBeInstanceOf(UnauthorizedError);

    const page = await browser.newPage();
    // Nothing listens on the client's loopback redirect: catch the navigation there.
    let finalUrl: URL | undefined;
    await page.route(`${CLIENT_REDIRECT}**`, (route) => {
      finalUrl = new URL(route.request().url());
      return route.fulfill({ status: 200, contentType: 'text/html', body: '<p>Signed in. You can close this window.</p>' });
    });

    await page.goto(provider.authorizationUrl!.href);
    expect(await page.textContent('#client-name')).toBe('MCP SDK e2e client');
    expect(await page.textContent('#redirect-uri')).toBe(CLIENT_REDIRECT);
    await page.screenshot({ path: join(ARTEFACTS, '1-consent.png'), fullPage: true });

    await page.click('#approve');
    await page.waitForURL(`${idp.issuer}/interaction/**`);
    await page.fill('input[name="login"]', 'carol');
    await page.fill('input[name="password"]', 'any');
    await page.screenshot({ path: join(ARTEFACTS, '2-provider-login.png'), fullPage: true });
    await page.click('button[type="submit"]');
    // The provider's own consent screen ("Continue").
    await page.waitForSelector('button[type="submit"]');
    await page.click('button[type="submit"]');
    await page.waitForURL(`${CLIENT_REDIRECT}**`);
    await page.screenshot({ path: join(ARTEFACTS, '3-back-at-client.png'), fullPage: true });

    expect(finalUrl?.searchParams.get('state')).toBe(provider.lastState);
    expect(finalUrl?.searchParams.get('iss')).toBe(base);
    await transport.finishAuth(finalUrl!.searchParams.get('code')!);
    const result = await client.callTool({ name: 'whoami', arguments: {} });
    expect(JSON.stringify(result)).toContain('carol@example.com');
    expect(existsSync(join(ARTEFACTS, '1-consent.png'))).toBe(true);
    await client.close();
    await page.close();
  });

  it('the consent page cannot be framed by another site', async () => {
    const page = await browser.newPage();
    const res = await page.request.get(`${base}/oauth/authorize?client_id=unknown`);
    expect(res.headers()['x-frame-options']).toBe('DENY');
    // A real page on another loopback origin frames our endpoint (a route-fulfilled page would
    // count as public and be blocked by Chromium's local-network rules for another reason).
    const framer = createHttpServer((_req, out) => {
      out.writeHead(200, { 'content-type': 'text/html' });
      out.end(`<iframe id="f" src="${base}/oauth/authorize?client_id=unknown"></iframe>`);
    });
    await new Promise<void>((resolve) => framer.listen(0, '127.0.0.1', resolve));
    try {
      await page.goto(`http://127.0.0.1:${(framer.address() as AddressInfo).port}/`);
      const frame = await (await page.waitForSelector('#f')).contentFrame();
      await frame?.waitForLoadState().catch(() => undefined);
      // biome-ignore lint/performance/useDomNodeTextContent: the text as rendered (what the user sees), not the DOM's raw text
      const framedText = frame ? await frame.evaluate(() => document.body?.innerText ?? '').catch(() => '') : '';
      expect(framedText).not.toContain('Unknown application');
      expect(frame?.url()).not.toBe(`${base}/oauth/authorize?client_id=unknown`);
    } finally {
      framer.close();
      await page.close();
    }
  });
});
