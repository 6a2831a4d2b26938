// @every-node: CI runs this file on every Node version it tests (docs/testing.md, "CI: phases and times").
/**
 * A new user's install on today's toolchain (issue 36): the four published packages, packed with
 * pnpm as they would be published, installed into fresh folders by npm 12 (from the registry,
 * `npx npm@12`; since 12.0 it runs no dependency's install script unless the app allows it) and by
 * pnpm 10 (which does not either). Then, with the network cut (a fresh network namespace with only
 * loopback, where the machine allows it), `createServer()` on the default store answers /health and
 * `npx ai-backend serve` starts; the CLI's first-hour commands (init, config check and print, token,
 * --version) run from the install, with a TypeScript and a YAML config; and each optional package (database drivers, a named provider's
 * package) gives its message naming the package and the install command while it is absent, and is
 * used once it is added.
 *
 * The registry is reached only by the installs (npm's and pnpm's caches make a warm run quick;
 * a cache never stands in for a check: every assertion runs on the installed folder).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain .mjs script shared with scripts/check-packages.mjs (no types)
import { packedPackages } from '../../scripts/packPackages.mjs';

/** npm 12's engines: ^22.22.2 || ^24.15.0 || >=26.0.0. */
function npm12Runs(version: string): boolean {
  const [major = 0, minor = 0, patch = 0] = version.replace(/^v/, '').split('.').map(Number);
  if (major === 22) return minor > 22 || (minor === 22 && patch >= 2);
  if (major === 24) return minor >= 15;
  return major >= 26;
}
const NPM12 = npm12Runs(process.version);
/** `du -sm node_modules` of the same install at a060d4f, before issue 36 (docs/publishing.md). */
const BEFORE_MIB = 194;
const NOT_HERE = `skipped: npm 12 needs Node ^22.22.2, ^24.15.0 or >=26 and this is ${process.version} (CI runs this file on 22, 24 and 26)`;

/** A network namespace with only loopback: root and util-linux `unshare` (as scripts/check-service-skips.mjs). */
const ISOLATED = process.getuid?.() === 0 && spawnSync('unshare', ['-n', 'true']).status === 0;

const root = mkdtempSync(path.join(tmpdir(), 'ai-backend-install-npm12-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const quiet = { npm_config_fund: 'false', npm_config_audit: 'false', npm_config_update_notifier: 'false' };
/**
 * npm 12, run as `node <its npm-cli.js>`: npx resolves it once (beforeAll) instead of at each of the
 * five installs (each `npx -y npm@12` asks the registry and resolves it again: about 3 s of CPU).
 */
let NPM: string[] = [];
const PNPM = ['npx', '-y', 'pnpm@10.34.9'];

function run(cmd: string[], cwd: string, timeout = 300_000): { code: number | null; out: string } {
  const r = spawnSync(cmd[0]!, cmd.slice(1), { cwd, encoding: 'utf8', timeout, env: { ...process.env, ...quiet } });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

/**
 * Start `cmd` in `cwd` without network, wait for its "ai-backend listening on <url>" line, GET
 * <url>/health from inside the same namespace, stop it. A command that exits first reports its
 * exit code and output instead.
 */
function probe(cwd: string, cmd: string[]): { health?: number; body?: string; code?: number | null; out: string } {
  const script = `
import { spawn } from 'node:child_process';
// Its own process group: 'npx ai-backend serve' is npx running the server as a child, and killing
// npx alone left the server running after the test.
const child = spawn(process.argv[2], process.argv.slice(3), { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
let out = '';
const stop = () => { try { process.kill(-child.pid, 'SIGTERM'); } catch { child.kill(); } };
const done = (r) => { stop(); console.log('PROBE ' + JSON.stringify({ ...r, out })); process.exit(0); };
const timer = setTimeout(() => done({ code: 'timeout' }), 60000);
const seen = async (d) => {
  out += d;
  const m = /ai-backend listening on (http:\\/\\/[^\\s"]+)/.exec(out);
  if (!m || child.listened) return;
  child.listened = true;
  clearTimeout(timer);
  const res = await fetch(m[1] + '/health').catch((e) => ({ status: -1, text: async () => String(e) }));
  done({ health: res.status, body: await res.text() });
};
child.stdout.on('data', seen);
child.stderr.on('data', seen);
child.on('exit', (code) => { if (!child.listened) { clearTimeout(timer); setTimeout(() => done({ code }), 50); } });
`;
  writeFileSync(path.join(cwd, 'probe.mjs'), script);
  const args = ['probe.mjs', ...cmd];
  const [c, a] = ISOLATED
    ? ['unshare', ['-n', 'sh', '-c', 'ip link set lo up && exec "$@"', 'sh', process.execPath, ...args]]
    : [process.execPath, args];
  const r = spawnSync(c, a as string[], { cwd, encoding: 'utf8', timeout: 90_000, env: { ...process.env, NO_COLOR: '1' } });
  const line = /^PROBE (.*)$/m.exec(r.stdout ?? '');
  if (!line) throw new Error(`probe gave no answer (exit ${r.status}):\n${r.stdout}${r.stderr}`);
  return JSON.parse(line[1]!) as { health?: number; body?: string; code?: number | null; out: string };
}

/** A fresh app folder whose dependencies are the packed packages (the internal ones via overrides, never the registry). */
function app(name: string, tarballs: Record<string, string>, manager: 'npm' | 'pnpm'): string {
  const dir = path.join(root, name);
  mkdirSync(dir);
  const file = (d: string) => `file:${tarballs[d]}`;
  const internal = { '@ai-backend/core': file('core'), '@ai-backend/auth': file('auth'), '@ai-backend/transports': file('transports') };
  writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify({
      name: `install-check-${name}`,
      private: true,
      type: 'module',
      // The README's `npm i ai-backend zod`.
      dependencies: { 'ai-backend': file('cli'), zod: '^4.1.0' },
      ...(manager === 'npm' ? { overrides: internal } : { pnpm: { overrides: internal } }),
    }),
  );
  // The README's library example, with a free port.
  writeFileSync(
    path.join(dir, 'server.mjs'),
    "import { createServer } from 'ai-backend';\nconst server = createServer({ port: 0 });\nawait server.start();\n",
  );
  return dir;
}

let tarballs: Record<string, string> = {};
beforeAll(() => {
  if (!NPM12) return;
  const bin = execFileSync('npx', ['-y', '-p', 'npm@12', '-c', 'command -v npm'], { encoding: 'utf8', env: { ...process.env, ...quiet } });
  NPM = [process.execPath, realpathSync(bin.trim().split('\n').pop()!)];
  const dest = path.join(root, 'tarballs');
  mkdirSync(dest);
  tarballs = packedPackages(dest);
}, 300_000);

describe.skipIf(!NPM12)(
  `npm 12 and pnpm, network cut after install${ISOLATED ? '' : ' (not isolated here: run as root with unshare for a network namespace)'}`,
  () => {
    let npmApp = '';
    /** The installed CLI run by node itself, as npx would start it (npx's own start is about a second of CPU). */
    const bin = () => [process.execPath, path.join(npmApp, 'node_modules', 'ai-backend', 'bin', 'ai-backend.js')];

    it('npm 12 installs the README example with no install script to run or block', () => {
      npmApp = app('npm', tarballs, 'npm');
      const r = run([...NPM, 'install', '--no-audit', '--no-fund'], npmApp);
      expect(r.code, r.out).toBe(0);
      expect(r.out).not.toMatch(/install-scripts|install scripts blocked/);
      expect(run([...NPM, 'install-scripts', 'ls'], npmApp).out).not.toMatch(/better-sqlite3|node-gyp|prebuild/);
    }, 300_000);

    it('installs at most 40% of the 194 MiB it did before issue 36: no typescript, no @trpc/server (inlined in core)', () => {
      // docs/publishing.md, "Install size and time": `du` of node_modules (what a user's disk holds),
      // measured before on the same install; the budget fails a change that brings a large package back.
      const installed = (name: string) => existsSync(path.join(npmApp, 'node_modules', name, 'package.json'));
      expect(installed('ai-backend')).toBe(true);
      expect(installed('typescript'), 'typescript is installed: some package requires it as a peer').toBe(false);
      expect(installed('@trpc/server'), '@trpc/server is installed: it is an optional peer (core inlines its runtime)').toBe(false);
      const kib = Number(execFileSync('du', ['-sk', 'node_modules'], { cwd: npmApp, encoding: 'utf8' }).split('\t')[0]);
      const sizes = execFileSync('sh', ['-c', 'du -sk node_modules/* node_modules/@*/* | sort -rn | head -8'], {
        cwd: npmApp,
        encoding: 'utf8',
      });
      expect(
        kib / 1024,
        `node_modules is ${(kib / 1024).toFixed(1)} MiB, over ${BEFORE_MIB} MiB × 0.4; largest:\n${sizes}`,
      ).toBeLessThanOrEqual(BEFORE_MIB * 0.4);
    });

    it('createServer() on the default store answers /health with no network', () => {
      const r = probe(npmApp, [process.execPath, 'server.mjs']);
      expect(r.health, r.out).toBe(200);
    }, 120_000);

    it('npx ai-backend serve starts with no network', () => {
      const r = probe(npmApp, ['npx', '--no-install', 'ai-backend', 'serve', '--port', '0']);
      expect(r.health, r.out).toBe(200);
    }, 120_000);

    it("the CLI's first-hour commands run from the install: init, config check and print, token; .ts and YAML configs load", () => {
      // A folder of the app (npx finds the app's bin from it), as docs/getting-started.md "Make it yours" runs them.
      expect(npmApp, 'the install test ran first').not.toBe('');
      const dir = path.join(npmApp, 'first-hour');
      mkdirSync(dir);
      // npx as typed for the first; then the installed bin itself (npx costs about a second each).
      const cli = (...args: string[]) => run([...bin(), ...args], dir);
      const init = run(['npx', '--no-install', 'ai-backend', 'init'], dir);
      expect(init.code, init.out).toBe(0);
      writeFileSync(path.join(dir, '.env'), `JWT_SECRET=${'s3'.repeat(20)}\n`);
      const check = cli('config', 'check');
      expect(check.out).toContain(`config ok (${path.join(dir, 'ai-backend.config.mjs')})`);
      expect(JSON.parse(cli('config', 'print').out).jwt.secret).toBe('[redacted]');
      expect(cli('token', '--sub', 'alice', '--scope', 'mcp').out.trim().split('.')).toHaveLength(3);
      const { version } = JSON.parse(readFileSync(path.join(npmApp, 'node_modules', 'ai-backend', 'package.json'), 'utf8')) as {
        version: string;
      };
      expect(cli('--version').out.trim()).toBe(version);
      // The loaders a config file needs come with the package (cosmiconfig's YAML) or with Node
      // (a TypeScript config: npm 12's Nodes strip types themselves, so jiti is not installed).
      rmSync(path.join(dir, 'ai-backend.config.mjs'));
      writeFileSync(
        path.join(dir, 'ai-backend.config.ts'),
        "import type { ConfigInput } from 'ai-backend';\nexport default { prot: 1 } satisfies ConfigInput as ConfigInput;\n",
      );
      expect(cli('config', 'check').out).toContain('unknown key(s): prot (did you mean port?)');
      expect(existsSync(path.join(npmApp, 'node_modules', 'jiti')), 'jiti is installed: it is an optional peer').toBe(false);
      // What Node's type stripping does not take (an enum) names the optional package that loads it.
      writeFileSync(path.join(dir, 'ai-backend.config.ts'), 'enum Mode { A }\nexport default { port: Mode.A };\n');
      const enumCheck = cli('config', 'check');
      expect(enumCheck.code).not.toBe(0);
      expect(enumCheck.out).toContain('npm i jiti@2');
      rmSync(path.join(dir, 'ai-backend.config.ts'));
      writeFileSync(path.join(dir, 'ai-backend.config.yaml'), 'mcp:\n  auth:\n    authType: jwt\n');
      expect(cli('config', 'check').out).toContain(`config ok (${path.join(dir, 'ai-backend.config.yaml')})`);
    }, 120_000);

    // Each optional package: absent, the start fails naming it and the command; added, it is used.
    // The three are added by one `npm i` (each install re-reads the whole tree: about 4 s of CPU),
    // after every absent case ran; the CLI runs as the installed bin (npx, which the first-hour test
    // covers, costs about a second of CPU each time).
    const cases = [
      {
        pkg: 'pg',
        install: 'pg@8',
        config: { storage: { type: 'postgres', postgres: { connectionString: 'postgres://u:p@127.0.0.1:9/db' } } },
      },
      { pkg: 'ioredis', install: 'ioredis@6', config: { storage: { type: 'redis', redis: { host: '127.0.0.1', port: 9 } } } },
      {
        pkg: '@ai-sdk/mistral',
        install: '@ai-sdk/mistral@3',
        config: {
          storage: { type: 'memory' },
          ai: { providers: { mist: { type: 'mistral', apiKey: 'k', defaultModel: 'mistral-small-latest' } } },
        },
      },
    ];
    const configFile = (c: (typeof cases)[number]) => `${c.pkg.replace(/\W/g, '-')}.json`;
    for (const c of cases) {
      it(`${c.pkg} absent: config check and serve name it and \`npm i ${c.install}\``, () => {
        expect(npmApp, 'the install test ran first').not.toBe('');
        writeFileSync(path.join(npmApp, configFile(c)), JSON.stringify({ ...c.config, mcp: { auth: { authType: 'none' } } }));
        const message = `needs the package ${c.pkg}, which is not installed. Install it: npm i ${c.install}`;
        const check = run([...bin(), 'config', 'check', '-c', configFile(c)], npmApp);
        expect(check.code, check.out).toBe(1);
        expect(check.out).toContain(message);
        const refused = probe(npmApp, [...bin(), 'serve', '--port', '0', '-c', configFile(c)]);
        expect(refused.health, refused.out).toBeUndefined();
        expect(refused.out).toContain(message);
      }, 120_000);
    }
    let added: { code: number | null; out: string } | undefined;
    for (const c of cases) {
      it(`${c.pkg} added (one \`npm i\` for the three): config check passes and the server uses it`, () => {
        added ??= run([...NPM, 'install', '--no-audit', '--no-fund', ...cases.map((x) => x.install)], npmApp);
        expect(added.code, added.out).toBe(0);
        expect(run([...bin(), 'config', 'check', '-c', configFile(c)], npmApp).out).toContain('config ok');
        const started = probe(npmApp, [...bin(), 'serve', '--port', '0', '-c', configFile(c)]);
        expect(started.out).not.toContain('needs the package');
        if (c.pkg === 'pg') {
          // The driver is loaded and dials the (closed) port: a connection error, not a missing package.
          expect(started.out).toMatch(/ECONNREFUSED|connect/);
        } else {
          // Redis: the store reconnects in the background and /health reports it; a named provider needs nothing more.
          expect(started.health, started.out).toBeGreaterThanOrEqual(200);
        }
      }, 300_000);
    }

    it('pnpm installs the README example without build scripts and the server answers with no network', () => {
      const dir = app('pnpm', tarballs, 'pnpm');
      const r = run([...PNPM, 'install'], dir);
      expect(r.code, r.out).toBe(0);
      expect(r.out).not.toMatch(/Ignored build scripts/);
      expect(probe(dir, [process.execPath, 'server.mjs']).health).toBe(200);
      const served = probe(dir, [path.join(dir, 'node_modules/.bin/ai-backend'), 'serve', '--port', '0']);
      expect(served.health, served.out).toBe(200);
    }, 300_000);
  },
);

it.skipIf(NPM12)(NOT_HERE, () => {
  expect(NPM12).toBe(false);
});
