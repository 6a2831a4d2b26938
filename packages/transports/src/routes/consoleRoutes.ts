import { readdirSync, readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Hono } from 'hono';
import type { ResolvedConfig } from '@ai-backend/core';

/**
 * The console's Content-Security-Policy: scripts, styles and connections only from this origin,
 * no inline script or style element, no plugin, never framed. uPlot and the console set styles
 * through the CSSOM (element.style), which `style-src 'self'` allows; `data:` images are the
 * canvases' exports.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
};

interface Asset {
  body: Uint8Array;
  type: string;
}

/**
 * Where the built assets are: `dist/console` in the published package (this code is bundled into
 * `dist/index.js` or a `dist/chunks/` file; tsc's own `dist/http/consoleRoutes.js` is beside it
 * too); from the TypeScript sources (tests with the ai-backend-source condition) the package's
 * own `dist/console`.
 */
function assetDirectory(): string | undefined {
  for (const rel of ['./console/', '../console/', '../../dist/console/']) {
    const dir = fileURLToPath(new URL(rel, import.meta.url));
    try {
      if (statSync(`${dir}index.html`).isFile()) return dir;
    } catch {
      // not here; try the next place
    }
  }
  return undefined;
}

let cached: Map<string, Asset> | undefined;
/** The assets, read once per process (a few hundred KB; served from memory). */
function loadAssets(): Map<string, Asset> {
  if (cached) return cached;
  const assets = new Map<string, Asset>();
  const dir = assetDirectory();
  if (dir) {
    for (const name of readdirSync(dir)) {
      const ext = name.slice(name.lastIndexOf('.'));
      const type = TYPES[ext];
      if (type) assets.set(name, { body: readFileSync(`${dir}${name}`), type });
    }
  }
  return (cached = assets);
}

function securityHeaders(headers: Headers): Headers {
  headers.set('content-security-policy', CONSOLE_CSP);
  headers.set('x-frame-options', 'DENY');
  headers.set('x-content-type-options', 'nosniff');
  // Same-origin referrers: the OAuth consent POST must carry our own Origin.
  headers.set('referrer-policy', 'same-origin');
  headers.set('cross-origin-opener-policy', 'same-origin');
  headers.set('cross-origin-resource-policy', 'same-origin');
  headers.set('cache-control', 'no-cache');
  return headers;
}

/** What the console needs to know before sign-in: public facts only (no secret, no user data). */
export interface ConsoleSettings {
  /** The server runs its OAuth authorization server: sign in there (PKCE, public client). */
  oauth: boolean;
  /** The scope that makes an OAuth identity an administrator (asked for; granted only to admin.users). */
  adminScope: string;
  /** Scopes the console asks for besides the admin scope. */
  scopes: string[];
  /** A loopback developer sign-in is open (`serve --dev`). */
  devSignIn: boolean;
}

export interface ConsoleRoutesOptions {
  /** Exchanges a one-time developer sign-in code for an administrator token (serve --dev only). */
  devSignIn?: (code: string) => Promise<string | undefined>;
}

/**
 * GET /console: the web console's static assets, served from memory with a strict CSP. The pages
 * carry no data: the console calls /rpc and /mcp like any client, with the signed-in user's token.
 */
export function consoleRoutes(config: ResolvedConfig, opts: ConsoleRoutesOptions = {}): Hono {
  const app = new Hono();
  const settings: ConsoleSettings = {
    oauth: config.auth.oauthServer === 'running',
    adminScope: config.admin.scope,
    scopes: config.oauth.scopesSupported,
    devSignIn: opts.devSignIn !== undefined,
  };
  const serveAsset = (name: string) => {
    const asset = loadAssets().get(name);
    if (!asset) {
      const body = name === 'index.html' ? 'console assets are not built (run the package build)' : 'not found';
      return new Response(body, {
        status: name === 'index.html' ? 503 : 404,
        headers: securityHeaders(new Headers({ 'content-type': 'text/plain; charset=utf-8' })),
      });
    }
    return new Response(asset.body as Uint8Array<ArrayBuffer>, { headers: securityHeaders(new Headers({ 'content-type': asset.type })) });
  };
  app.get('/console', (c) => c.redirect('/console/', 302));
  // Browsers ask every origin for /favicon.ico (pages without an icon link: the OAuth consent page,
  // a JSON answer opened in a tab); the console's own pages name favicon.svg.
  app.get('/favicon.ico', () => serveAsset('favicon.ico'));
  app.get('/console/', () => serveAsset('index.html'));
  if (opts.devSignIn) {
    const exchange = opts.devSignIn;
    app.post('/console/dev-session', async (c) => {
      const body = (await c.req.json().catch(() => null)) as { code?: unknown } | null;
      const code = typeof body?.code === 'string' ? body.code : '';
      const token = code ? await exchange(code) : undefined;
      const headers = securityHeaders(new Headers({ 'content-type': 'application/json' }));
      headers.set('cache-control', 'no-store'); // a token: never cached
      if (!token) return new Response(JSON.stringify({ error: 'unknown sign-in code' }), { status: 401, headers });
      return new Response(JSON.stringify({ token }), { headers });
    });
  }
  // settings.json is answered here, not by a route of its own: a static route beside this
  // parameter route would keep Hono on its slower TrieRouter for every request of the server.
  app.get('/console/:file', (c) => {
    const file = c.req.param('file');
    if (file === 'settings.json')
      return new Response(JSON.stringify(settings), { headers: securityHeaders(new Headers({ 'content-type': 'application/json' })) });
    // Only the flat, known file names of the build (no path can be formed from the request).
    return /^[\w.-]+$/.test(file) && file !== 'index.html' ? serveAsset(file) : serveAsset('\0');
  });
  return app;
}
