/**
 * Browser safety, proven in a real browser (Debian's Chromium through playwright-core): a page on
 * another local origin (another port on 127.0.0.1, `localhost` against `127.0.0.1`) and a
 * DNS-rebinding page (Host: attacker.test, resolved to 127.0.0.1) try every way a page can reach
 * a `serve --dev`-like server with a writable workspace: simple and preflighted fetch, and form
 * posts (text/plain, urlencoded, multipart) to /rpc, /trpc and /mcp. They get nothing: no answer
 * the page can read, and no file listed, read or written (checked on the filesystem). A control
 * request from Node proves each write would have worked if the server let it through.
 */
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mergeConfig, type ConfigInput } from '@ai-backend/core';
import { createServer, type AiBackendServer } from '@ai-backend/transports';
import { devOverrides } from '../../packages/cli/src/commands/serve.js';
import { testService } from '@ai-backend/test-utils/services';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Skipped (and named in the run's last line) without Chromium; CI installs it and fails instead.
const chromiumService = await testService('chromium');
const CHROMIUM = chromiumService.path ?? '/usr/bin/chromium';
const SECRET = 'top-secret-contents-4711';

let dir: string;
let server: AiBackendServer;
let port: number;
let attacker: Server;
let attackerPort: number;
let browser: Browser;

/** Every write the page tries names its file after the vector, so a success shows which one. */
const rpcWrite = (name: string) =>
  JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'system.writeFile', params: { path: `${name}.txt`, content: 'pwned' } });

/**
 * The attack, as page-side source (installed with addInitScript as `window.__attack`). Returns
 * what the page could read; form posts go to an iframe whose content another origin cannot read
 * anyway, so their effect is judged on the filesystem.
 */
const ATTACK_SOURCE = `
window.__attack = async (target, tag) => {
  const bodies = {
    rpc: (n) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'system.writeFile', params: { path: n + '.txt', content: 'pwned' } }),
    trpc: (n) => JSON.stringify({ json: { path: n + '.txt', content: 'pwned' } }),
    mcp: (n) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'writeFile', arguments: { path: n + '.txt', content: 'pwned' } } }),
  };
  const seen = [];
  const tryFetch = async (label, url, init) => {
    try {
      const res = await fetch(url, init);
      const text = await res.text();
      if (res.type !== 'opaque') seen.push(label + ': ' + res.status + ' ' + text.slice(0, 200));
    } catch {
      /* blocked: what we want */
    }
  };
  const json = { 'content-type': 'application/json' };
  const mcpAccept = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const initialize = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'evil', version: '1' } } });
  // Reads: list and read the workspace.
  await tryFetch('rpc list (simple)', target + '/rpc', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'system.listFiles', params: {} }) });
  await tryFetch('rpc read (preflighted)', target + '/rpc', { method: 'POST', headers: json, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'system.readFile', params: { path: 'secret.txt' } }) });
  await tryFetch('trpc read (GET)', target + '/trpc/system.readFile?input=' + encodeURIComponent(JSON.stringify({ json: { path: 'secret.txt' } })));
  await tryFetch('trpc list (GET no-cors)', target + '/trpc/system.listFiles?input=' + encodeURIComponent(JSON.stringify({ json: {} })), { mode: 'no-cors' });
  await tryFetch('mcp initialize (preflighted)', target + '/mcp', { method: 'POST', headers: mcpAccept, body: initialize });
  // Writes by fetch: simple (no preflight), no-cors, and preflighted.
  await tryFetch('rpc write (simple)', target + '/rpc', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: bodies.rpc(tag + '-fetch-rpc-simple') });
  await tryFetch('rpc write (no-cors)', target + '/rpc', { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: bodies.rpc(tag + '-fetch-rpc-nocors') });
  await tryFetch('rpc write (preflighted)', target + '/rpc', { method: 'POST', headers: json, body: bodies.rpc(tag + '-fetch-rpc-json') });
  await tryFetch('trpc write (simple)', target + '/trpc/system.writeFile', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: bodies.trpc(tag + '-fetch-trpc-simple') });
  await tryFetch('trpc write (no-cors)', target + '/trpc/system.writeFile', { method: 'POST', mode: 'no-cors', body: bodies.trpc(tag + '-fetch-trpc-nocors') });
  await tryFetch('trpc write (preflighted)', target + '/trpc/system.writeFile', { method: 'POST', headers: json, body: bodies.trpc(tag + '-fetch-trpc-json') });
  await tryFetch('mcp write (no-cors)', target + '/mcp', { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: bodies.mcp(tag + '-fetch-mcp-nocors') });
  // Form posts: text/plain (the classic JSON smuggle: name + '=' + value), urlencoded, multipart.
  const formPost = (action, enctype, body) =>
    new Promise((resolve) => {
      const frame = document.createElement('iframe');
      frame.name = 'f' + Math.random().toString(36).slice(2);
      document.body.appendChild(frame);
      const form = document.createElement('form');
      form.method = 'POST';
      form.action = action;
      form.enctype = enctype;
      form.target = frame.name;
      const input = document.createElement('input');
      input.type = 'hidden';
      // text/plain sends name=value: cut the JSON so the '=' lands inside the content string.
      const cut = body.lastIndexOf('"content":"') + '"content":"'.length;
      input.name = body.slice(0, cut);
      input.value = body.slice(cut);
      form.appendChild(input);
      document.body.appendChild(form);
      frame.addEventListener('load', () => resolve(), { once: true });
      setTimeout(resolve, 3000); // a cap, not a pause: a refused cross-origin post may never fire load
      form.submit();
    });
  for (const enctype of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data']) {
    const short = enctype.split('/')[1].slice(0, 5);
    await formPost(target + '/rpc', enctype, bodies.rpc(tag + '-form-rpc-' + short));
    await formPost(target + '/trpc/system.writeFile', enctype, bodies.trpc(tag + '-form-trpc-' + short));
    await formPost(target + '/mcp', enctype, bodies.mcp(tag + '-form-mcp-' + short));
  }
  return seen;
};
`;

const evaluateAttack = (page: Page, target: string, tag: string): Promise<string[]> =>
  page.evaluate(
    ([t, g]) => (window as unknown as { __attack: (t: string, g: string) => Promise<string[]> }).__attack(t!, g!),
    [target, tag],
  );

async function workspaceFiles(): Promise<string[]> {
  return (await readdir(dir)).filter((f) => f !== 'secret.txt' && f !== '.ai-backend-data').sort();
}

describe.skipIf(!chromiumService.ok)('a page on another origin gets nothing from a serve --dev server (Chromium)', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ai-backend-browser-'));
    await writeFile(join(dir, 'secret.txt'), SECRET);
    // serve --dev, with the workspace writable so a write that slipped through would show.
    const dev = devOverrides(dir) as { serverWorkspaces: { default: Record<string, unknown> } };
    dev.serverWorkspaces.default.readOnly = false;
    const config: ConfigInput = mergeConfig(dev as ConfigInput, {
      port: 0,
      storage: { type: 'memory' },
      monitoring: { logging: { level: 'silent' } },
    });
    server = createServer(config);
    port = (await server.start()).port;

    // The attacker's site: a blank page on another port; the attack runs in it.
    attacker = createHttpServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>totally harmless</title><body></body>'),
    );
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
    attackerPort = (attacker.address() as AddressInfo).port;

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
        '--host-resolver-rules=MAP attacker.test 127.0.0.1',
      ],
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await new Promise<void>((resolve) => (attacker ? attacker.close(() => resolve()) : resolve()));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const pageAt = async (url: string, fulfil?: string): Promise<Page> => {
    const page = await browser.newPage();
    if (fulfil) await page.route(url, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: fulfil }));
    await page.addInitScript(ATTACK_SOURCE);
    await page.goto(url);
    return page;
  };

  it.each([
    ['127.0.0.1 on another port → 127.0.0.1', () => `http://127.0.0.1:${attackerPort}/`, () => `http://127.0.0.1:${port}`],
    ['localhost on another port → 127.0.0.1', () => `http://localhost:${attackerPort}/`, () => `http://127.0.0.1:${port}`],
    ['127.0.0.1 on another port → localhost', () => `http://127.0.0.1:${attackerPort}/`, () => `http://localhost:${port}`],
  ])(
    '%s: nothing readable, nothing written',
    async (_name, pageUrl, target) => {
      const page = await pageAt(pageUrl());
      const seen = await evaluateAttack(page, target(), 'x');
      await page.close();
      expect(seen).toEqual([]);
      expect(await workspaceFiles()).toEqual([]);
    },
    60_000,
  );

  it('DNS rebinding (Host: attacker.test, same-origin to the page): nothing readable, nothing written', async () => {
    // The attacker's page is served as http://attacker.test:<server port>/, then "rebound" to our server.
    const url = `http://attacker.test:${port}/`;
    const page = await pageAt(url, '<!doctype html><title>rebinding</title><body></body>');
    const seen = await evaluateAttack(page, `http://attacker.test:${port}`, 'rebind');
    await page.close();
    expect(seen).toEqual([]);
    expect(await workspaceFiles()).toEqual([]);
  }, 60_000);

  it('control: the same write from a non-browser client (no Origin) works, so the checks above can fail', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/rpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: rpcWrite('control'),
    });
    expect(((await res.json()) as { result?: { success: boolean } }).result?.success).toBe(true);
    expect(await workspaceFiles()).toEqual(['control.txt']);
    // And a same-origin page (the server's own origin) may read: the rules are not "refuse every browser".
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${port}/health`);
    const text = await page.evaluate(
      async (t) =>
        (
          await fetch(`${t}/rpc`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'system.readFile', params: { path: 'secret.txt' } }),
          })
        ).text(),
      `http://127.0.0.1:${port}`,
    );
    await page.close();
    expect(text).toContain(SECRET);
  }, 60_000);
});
