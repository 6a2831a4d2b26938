// @every-node: CI runs this file on every Node version it tests (docs/testing.md, "CI: phases and times").
/**
 * .ci/sqlite-binary.sh (run by .ci/node.sh on every switch of Node): better-sqlite3's binary per
 * ABI, and what it says when the module does not build. Run on a stand-in package (its `install`
 * script "builds" only when STAND_IN_BUILD=ok, and it loads only with the binary of the running
 * ABI) and a cache folder of the test's own, so no real binary of the checkout is touched. The
 * `node` is the one running the tests: the node:sqlite branch is checked on 22.13+, the Node 20
 * branch on 20 (CI runs this file on 20, 22, 24 and 26).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain .mjs script (no types)
import { ROOT } from '../../scripts/packPackages.mjs';

const root = mkdtempSync(path.join(tmpdir(), 'ai-backend-sqlite-binary-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const ABI = process.versions.modules;
const NODE_SQLITE = Boolean(process.getBuiltinModule?.('node:sqlite'));
const VERSION = '0.0.0-stand-in';
let pkg = '';
let cache = '';
const binary = () => path.join(pkg, 'build/Release/better_sqlite3.node');
const cached = () => path.join(cache, `better-sqlite3-${VERSION}-abi${ABI}.node`);
const failedMarker = () => path.join(cache, `better-sqlite3-${VERSION}-abi${ABI}.fails`);

let n = 0;
beforeEach(() => {
  const dir = path.join(root, String(n++));
  pkg = path.join(dir, 'better-sqlite3');
  cache = path.join(dir, 'cache');
  mkdirSync(pkg, { recursive: true });
  writeFileSync(
    path.join(pkg, 'package.json'),
    JSON.stringify({ name: 'better-sqlite3', version: VERSION, main: 'index.js', scripts: { install: 'node build.js' } }),
  );
  writeFileSync(
    path.join(pkg, 'index.js'),
    `const { readFileSync } = require('node:fs');
module.exports = class Database {
  constructor() {
    if (readFileSync(__dirname + '/build/Release/better_sqlite3.node', 'utf8') !== 'abi' + process.versions.modules) throw new Error('built for another ABI');
  }
  prepare() { return { get: () => ({ 1: 1 }) }; }
};
`,
  );
  writeFileSync(
    path.join(pkg, 'build.js'),
    `if (process.env.STAND_IN_BUILD !== 'ok') { console.error('gyp ERR! build error'); process.exit(1); }
require('node:fs').mkdirSync(__dirname + '/build/Release', { recursive: true });
require('node:fs').writeFileSync(__dirname + '/build/Release/better_sqlite3.node', 'abi' + process.versions.modules);
`,
  );
});

function switchTo(build: 'builds' | 'fails', args: string[] = []): { code: number | null; out: string; err: string } {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${path.dirname(process.execPath)}:${process.env.PATH}`,
    AI_BACKEND_CI_CACHE: cache,
    AI_BACKEND_CI_BETTER_SQLITE3: pkg,
  };
  if (build === 'builds') env.STAND_IN_BUILD = 'ok';
  else delete env.STAND_IN_BUILD;
  const r = spawnSync('bash', ['.ci/sqlite-binary.sh', ...args], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe(`.ci/sqlite-binary.sh on Node ${process.version} (${NODE_SQLITE ? 'has' : 'no'} node:sqlite)`, () => {
  it('a build that works: compiled once, kept per ABI, and copied back instead of compiling again', () => {
    const first = switchTo('builds');
    expect(first.code, first.err).toBe(0);
    expect(first.out).toContain(`better-sqlite3: compiling for Node ${process.version} (ABI ${ABI})`);
    expect(first.out).toContain(`better-sqlite3 ${VERSION}: loads on Node ${process.version}`);
    expect(readFileSync(cached(), 'utf8')).toBe(`abi${ABI}`);

    // Another ABI's binary in the package (the previous switch): the cached one comes back, no build.
    writeFileSync(binary(), 'abi0');
    const again = switchTo('fails');
    expect(again.code, again.err).toBe(0);
    expect(again.out).not.toContain('compiling');
    expect(again.out).toContain('loads on Node');
    expect(readFileSync(binary(), 'utf8')).toBe(`abi${ABI}`);
    expect(existsSync(failedMarker())).toBe(false);
  });

  it('--cache-only: built on a copy into the cache, the package binary untouched; a failed build is not remembered', () => {
    // The package holds another ABI's binary (tests on another Node are using it meanwhile).
    mkdirSync(path.dirname(binary()), { recursive: true });
    writeFileSync(binary(), 'abi0');
    const failed = switchTo('fails', ['--cache-only']);
    expect(failed.code, failed.err).toBe(0);
    expect(failed.out).toContain(
      `better-sqlite3 ${VERSION}: did not build for Node ${process.version} here; the switch to it will try again`,
    );
    expect(existsSync(failedMarker())).toBe(false);
    expect(existsSync(cached())).toBe(false);

    const built = switchTo('builds', ['--cache-only']);
    expect(built.code, built.err).toBe(0);
    expect(built.out).toContain(`better-sqlite3: compiling for Node ${process.version} (ABI ${ABI}), into the cache only`);
    expect(readFileSync(cached(), 'utf8')).toBe(`abi${ABI}`);
    expect(readFileSync(binary(), 'utf8')).toBe('abi0');
    expect(switchTo('builds', ['--cache-only']).out).toContain(`already prepared for Node ${process.version}`);

    // The real switch then copies the prepared binary in, without compiling.
    const after = switchTo('fails');
    expect(after.code, after.err).toBe(0);
    expect(after.out).not.toContain('compiling');
    expect(readFileSync(binary(), 'utf8')).toBe(`abi${ABI}`);
  });

  it.runIf(NODE_SQLITE)('a build that fails where node:sqlite exists: said, remembered, not retried, and the switch succeeds', () => {
    const first = switchTo('fails');
    expect(first.code, first.err).toBe(0);
    expect(first.out).toContain(`better-sqlite3: compiling for Node ${process.version}`);
    expect(first.out).toContain(
      `better-sqlite3 ${VERSION}: does not load on Node ${process.version}; it is optional here (the SQLite store runs on node:sqlite)`,
    );
    expect(existsSync(failedMarker())).toBe(true);
    const again = switchTo('fails');
    expect(again.code, again.err).toBe(0);
    expect(again.out).not.toContain('compiling');
    expect(again.out).toContain('it is optional here');
  });

  it.runIf(!NODE_SQLITE)(
    'a build that fails on a Node without node:sqlite: the switch fails, saying so, and the next one tries again',
    () => {
      const first = switchTo('fails');
      expect(first.code).toBe(1);
      expect(first.out).toContain(`better-sqlite3: compiling for Node ${process.version}`);
      expect(first.err).toContain(`better-sqlite3 ${VERSION} does not load on Node ${process.version}, which has no node:sqlite`);
      // Remembered, but here it is the only driver: the next switch compiles again.
      expect(existsSync(failedMarker())).toBe(true);
      const again = switchTo('fails');
      expect(again.code).toBe(1);
      expect(again.out).toContain('compiling');
    },
  );
});
