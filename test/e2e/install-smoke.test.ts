// @every-node: CI runs this file on every Node version it tests (docs/testing.md, "CI: phases and times").
/**
 * A user's install, for real: the four published packages are packed with pnpm (as they would be
 * published), installed with **npm** into a fresh temporary app together with zod 4, and the
 * README's "In your own app" snippet is run as written (only the port is made free). The app is
 * then called over /trpc (a typed @trpc/client client, type-checked with skipLibCheck: false
 * against the published .d.ts files), /rpc and MCP (the official SDK client).
 * npm's cache (~/.npm) is reused between runs, so a warm run takes seconds, not minutes.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TYPES_CHECKED } from '@ai-backend/test-utils';
import { afterAll, beforeAll, expect, it } from 'vitest';
// @ts-expect-error -- a plain .mjs script shared with scripts/check-packages.mjs (no types)
import { packedPackages, ROOT } from '../../scripts/packPackages.mjs';

const app = mkdtempSync(path.join(tmpdir(), 'ai-backend-install-'));
let server: ChildProcess | undefined;
let url = '';
/** What server.mjs printed (stdout and stderr). */
let out = '';

/** The README's "In your own app" code block. */
function readmeSnippet(): string {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## In your own app'));
  const match = /```ts\n([\s\S]*?)```/.exec(section);
  if (!match) throw new Error('README: no ```ts block under "## In your own app"');
  return match[1]!;
}

/**
 * Node 22.13+ ships node:sqlite, the default store's driver there; older Node needs the optional
 * better-sqlite3 package, which a user on Node 20 adds to the app (docs/node-versions.md).
 */
const nodeSqlite = Boolean(process.getBuiltinModule?.('node:sqlite'));

/**
 * better-sqlite3 (the default store's driver before Node 22.13) installs a prebuilt binary, downloaded by
 * prebuild-install; offline that download fails and npm compiles SQLite from source, minutes of
 * CPU. The binary this repository's install already has is offered as a local prebuild (the name
 * prebuild-install looks for), so the app gets what a user online would: a prebuilt binary. When
 * npm picks another better-sqlite3 version the name does not match and it compiles as before.
 */
function localPrebuilds(): Record<string, string> {
  try {
    const pkgJson = createRequire(path.join(ROOT, 'packages/core/package.json')).resolve('better-sqlite3/package.json');
    const dir = path.dirname(pkgJson);
    const { version } = JSON.parse(readFileSync(pkgJson, 'utf8')) as { version: string };
    if (!existsSync(path.join(dir, 'build/Release/better_sqlite3.node'))) return {};
    const out = path.join(app, 'prebuilds');
    mkdirSync(out);
    const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
    execFileSync('tar', ['-czf', path.join(out, name), '-C', dir, 'build/Release/better_sqlite3.node']);
    return { npm_config_better_sqlite3_local_prebuilds: out };
  } catch {
    return {};
  }
}

function npm(args: string[], env: Record<string, string> = {}): void {
  execFileSync('npm', args, {
    cwd: app,
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
    env: { ...process.env, npm_config_fund: 'false', npm_config_audit: 'false', npm_config_update_notifier: 'false', ...env },
  });
}

beforeAll(async () => {
  const tarballs: Record<string, string> = packedPackages(app);
  const file = (dir: string) => `file:${tarballs[dir]}`;
  writeFileSync(
    path.join(app, 'package.json'),
    JSON.stringify({
      name: 'my-app',
      private: true,
      type: 'module',
      dependencies: {
        'ai-backend': file('cli'),
        // The internal packages come from the tarballs too (not the registry).
        '@ai-backend/core': file('core'),
        '@ai-backend/auth': file('auth'),
        '@ai-backend/transports': file('transports'),
        zod: '^4.1.0',
        '@trpc/client': '^11.25.2',
        superjson: '^2.2.6',
        '@modelcontextprotocol/sdk': '^1.32.2',
        ...(nodeSqlite ? {} : { 'better-sqlite3': '^12.11.1' }),
      },
      // TypeScript 5.9 and 7 (what `npm i typescript` installs since 7.0): the published types are
      // checked by both. Where they are not checked (TYPES_CHECKED), 5.9 only compiles the client.
      devDependencies: {
        typescript: '~5.9.3',
        ...(TYPES_CHECKED ? {} : { typescript7: 'npm:typescript@^7.0.2' }),
        '@types/node': '^20.19.0',
      },
    }),
  );
  npm(['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], nodeSqlite ? {} : localPrebuilds());

  // The snippet as the README has it; only the port (8000 may be taken) and a line saying where it listens.
  const snippet = readmeSnippet();
  expect(snippet).toContain('port: 8000');
  expect(snippet).toContain('await server.start();');
  writeFileSync(
    path.join(app, 'server.mjs'),
    snippet
      .replace('port: 8000', 'port: 0')
      .replace('await server.start();', "const bound = await server.start(); console.log('LISTENING ' + bound.url);"),
  );

  server = spawn(process.execPath, ['server.mjs'], { cwd: app, stdio: ['ignore', 'pipe', 'pipe'] });
  url = await new Promise<string>((resolve, reject) => {
    server!.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /LISTENING (\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    server!.stderr!.on('data', (d: Buffer) => void (out += d.toString()));
    server!.once('exit', (code) => reject(new Error(`server.mjs exited with ${code}:\n${out}`)));
  });
}, 600_000);

afterAll(() => {
  server?.kill();
  rmSync(app, { recursive: true, force: true });
});

it('the installed manifests carry no workspace: ranges and the app resolves ai-backend to its dist', () => {
  for (const dir of ['ai-backend', '@ai-backend/core', '@ai-backend/auth', '@ai-backend/transports']) {
    const manifest = readFileSync(path.join(app, 'node_modules', dir, 'package.json'), 'utf8');
    expect(manifest).not.toContain('workspace:');
    expect(manifest).not.toContain('ai-backend-source');
  }
  const resolved = execFileSync(process.execPath, ['--input-type=module', '-e', "console.log(import.meta.resolve('ai-backend'))"], {
    cwd: app,
    encoding: 'utf8',
  });
  expect(resolved.trim()).toMatch(/node_modules\/ai-backend\/dist\/index\.js$/);
});

it('is ESM only as the README says: require() works where Node can require ES modules, else ERR_REQUIRE_ESM', () => {
  const run = (flags: string[]) =>
    spawnSync(process.execPath, [...flags, '-e', "console.log(typeof require('ai-backend').createServer)"], { cwd: app, encoding: 'utf8' });
  // Node 20.19+ / 22.12+ (process.features.require_module); a top-level await anywhere in the graph would break it.
  if ((process.features as { require_module?: boolean }).require_module) {
    const now = run([]);
    expect(now.stdout.trim(), now.stderr).toBe('function');
    expect(run(['--no-experimental-require-module']).stderr).toContain('ERR_REQUIRE_ESM');
  } else expect(run([]).stderr).toContain('ERR_REQUIRE_ESM');
});

it.runIf(nodeSqlite)(
  'on Node 22.13+ no native module is installed: better-sqlite3 is an optional peer, and the default store runs on node:sqlite',
  () => {
    expect(existsSync(path.join(app, 'node_modules', 'better-sqlite3'))).toBe(false);
    expect(existsSync(path.join(app, '.ai-backend-data', 'ai-backend.db'))).toBe(true);
  },
);

it('does what the README says createServer does with no other options: SQLite in ./.ai-backend-data, oauth with nobody able to sign in, and a warning', async () => {
  expect(existsSync(path.join(app, '.ai-backend-data', 'ai-backend.db'))).toBe(true);
  expect(out).toMatch(/authType is 'oauth' but OAuth is not configured.*nobody can sign in/);
  // A protected procedure is refused; the public one answers (next test).
  const res = await fetch(`${url}/rpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'billing.getTokenBalance', params: {} }),
  });
  expect(((await res.json()) as { error?: { data?: { httpStatus?: number } } }).error?.data?.httpStatus).toBe(401);
  // "created as soon as createServer is called ... started or not": a server never started, in a fresh directory.
  const fresh = path.join(app, 'never-started');
  mkdirSync(fresh);
  const created = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      "import { createServer } from 'ai-backend'; const s = createServer({ monitoring: { logging: { level: 'silent' } } }); await s.ready(); await s.stop();",
    ],
    { cwd: fresh, encoding: 'utf8' },
  );
  expect(created.status, created.stderr).toBe(0);
  expect(existsSync(path.join(fresh, '.ai-backend-data', 'ai-backend.db'))).toBe(true);
});

it('answers over /rpc', async () => {
  const res = await fetch(`${url}/rpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'weather.forecast', params: { city: 'Oslo' } }),
  });
  expect(await res.json()).toEqual({ jsonrpc: '2.0', id: 1, result: { city: 'Oslo', sky: 'sunny' } });
});

it('serves the web console from the installed package (its built assets ship in @ai-backend/transports)', async () => {
  const page = await fetch(`${url}/console/`);
  expect(page.status).toBe(200);
  expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  const html = await page.text();
  for (const asset of ['/console/app.js', '/console/app.css']) {
    expect(html).toContain(asset);
    const res = await fetch(url + asset);
    expect(res.status, asset).toBe(200);
    expect((await res.arrayBuffer()).byteLength, asset).toBeGreaterThan(1000);
  }
  expect(existsSync(path.join(app, 'node_modules/@ai-backend/transports/dist/console/app.js'))).toBe(true);
});

/**
 * The typed client app (a custom router and a @trpc/client + MCP client) and its two tsconfigs,
 * written once for the two tests below.
 */
function writeClientApp(): void {
  if (existsSync(path.join(app, 'client.ts'))) return;
  // The custom router's types, as a user shares them with their client.
  writeFileSync(
    path.join(app, 'router.ts'),
    `import { router, publicProcedure } from 'ai-backend';
import { z } from 'zod';
const weather = router({
  forecast: publicProcedure
    .meta({ description: 'Forecast for a city', mcp: { public: true } })
    .input(z.object({ city: z.string() }))
    .query(({ input }) => ({ city: input.city, sky: 'sunny' })),
});
export const api = router({ weather });
export type Api = typeof api;
`,
  );
  writeFileSync(
    path.join(app, 'client.ts'),
    `import { createTRPCClient, httpBatchLink } from '@trpc/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import superjson from 'superjson';
import type { Api } from './router.js';

const url = process.argv[2]!;
const trpc = createTRPCClient<Api>({ links: [httpBatchLink({ url: url + '/trpc', transformer: superjson })] });
const forecast = await trpc.weather.forecast.query({ city: 'Paris' });
const sky: string = forecast.sky;
// @ts-expect-error -- the input type comes from the router: a number is not a city
void (() => trpc.weather.forecast.query({ city: 42 }));

const mcp = new Client({ name: 'install-smoke', version: '1.0.0' });
await mcp.connect(new StreamableHTTPClientTransport(new URL(url + '/mcp')));
const tools = (await mcp.listTools()).tools.map((t) => t.name);
const called = await mcp.callTool({ name: 'forecast', arguments: { city: 'Rome' } });
await mcp.close();
console.log(JSON.stringify({ forecast, sky, tools, called }));
`,
  );
  writeFileSync(
    path.join(app, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        skipLibCheck: false,
        types: ['node'],
        outDir: 'out',
        rootDir: '.',
      },
      files: ['router.ts', 'client.ts'],
    }),
  );
  // The same files as a bundler-based app sees them (exports resolved with the "import" and
  // "types" conditions, no file extensions required).
  writeFileSync(
    path.join(app, 'tsconfig.bundler.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'ESNext',
        moduleResolution: 'Bundler',
        strict: true,
        skipLibCheck: false,
        types: ['node'],
        noEmit: true,
      },
      files: ['router.ts', 'client.ts'],
    }),
  );
}

/** Runs the app's tsc (5.9, or `typescript7`) with `args`; its diagnostics become the error. */
function tsc(args: string[], pkg: 'typescript' | 'typescript7' = 'typescript'): void {
  try {
    execFileSync(process.execPath, [path.join(app, `node_modules/${pkg}/bin/tsc`), ...args], {
      cwd: app,
      encoding: 'utf8',
      stdio: 'pipe',
    });
  } catch (err) {
    throw new Error(`${pkg} tsc ${args.join(' ')} failed in the installed app:\n${(err as { stdout: string }).stdout}`);
  }
}

it.skipIf(TYPES_CHECKED)(
  'a typed @trpc/client client type-checks (skipLibCheck: false) against the published types, under NodeNext and Bundler',
  () => {
    writeClientApp();
    tsc(['-p', 'tsconfig.json']); // emits out/, which the next test runs
    tsc(['-p', 'tsconfig.bundler.json']);
  },
  600_000, // tsc without skipLibCheck reads every published declaration file
);

it.skipIf(TYPES_CHECKED)(
  'the same client type-checks under TypeScript 7 (the native compiler), NodeNext and Bundler',
  () => {
    writeClientApp();
    tsc(['-p', 'tsconfig.json', '--noEmit'], 'typescript7');
    tsc(['-p', 'tsconfig.bundler.json'], 'typescript7');
  },
  120_000,
);

it('the typed client, compiled, calls /trpc and MCP', () => {
  writeClientApp();
  // Where the test above did not run (AI_BACKEND_TEST_TYPES_CHECKED), emit without checking.
  if (!existsSync(path.join(app, 'out/client.js'))) tsc(['-p', 'tsconfig.json', '--noCheck']);
  const out = execFileSync(process.execPath, ['out/client.js', url], { cwd: app, encoding: 'utf8', timeout: 60_000 });
  const result = JSON.parse(out.trim().split('\n').at(-1)!);
  expect(result.forecast).toEqual({ city: 'Paris', sky: 'sunny' });
  expect(result.tools).toContain('forecast');
  expect(JSON.stringify(result.called.structuredContent ?? result.called.content)).toContain('Rome');
}, 300_000);
