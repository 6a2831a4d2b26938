/**
 * The floors (.dependency-cruiser.cjs, docs/architecture.md) hold: dependency-cruiser finds no
 * import circle, no upward import between packages, no core layer importing one above it, no
 * service folder importing one beside or above it, and the console's floors in order; and no loop
 * between folders anywhere. Then: the rules reach every package, every folder of core and of its
 * services, and every file of the console, so a new one cannot slip past them; and each rule bites.
 */
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { folderLoops } from './folderLoops.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CONFIG = path.join(ROOT, '.dependency-cruiser.cjs');
const BIN = path.join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');
const run = promisify(execFile);

interface Violation {
  rule: { name: string };
  from: string;
  to: string;
  cycle?: Array<{ name: string }>;
}
type PathSpec = string | string[] | undefined;
interface Rule {
  name: string;
  from: { path?: PathSpec; pathNot?: PathSpec };
  to: { path?: PathSpec; circular?: boolean };
}

const rules = (createRequire(import.meta.url)(CONFIG) as { forbidden: Rule[] }).forbidden;
const subdirs = (dir: string) =>
  readdirSync(path.join(ROOT, dir), { withFileTypes: true })
    .filter((d) => d.isDirectory() && d.name !== '__tests__')
    .map((d) => d.name);
/** Source files under `dir`, relative to the repository, tests left out (as the rules leave them). */
const sources = (dir: string): string[] =>
  readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((d) => d.isFile() && d.name.endsWith('.ts') && !d.name.endsWith('.test.ts'))
    .map((d) => path.relative(ROOT, path.join(d.parentPath, d.name)).split(path.sep).join('/'))
    .filter((f) => !f.includes('/__tests__/'));

const PACKAGES = subdirs('packages');
const CONSOLE = 'packages/transports/console/src';
/** What the first test cruises: every package's sources and the browser console. */
const SOURCE_DIRS = [...PACKAGES.map((p) => `packages/${p}/src`), CONSOLE];
/** Not packages, so no floor rule names them; cruised too (tests' helpers, not the tests), so that no import circle hides there. */
const OTHER_DIRS = ['bench', 'scripts', 'examples', 'test'];

const anyMatch = (spec: PathSpec, file: string) => [spec ?? []].flat().some((p) => new RegExp(p).test(file));
const fromMatches = (r: Rule, file: string) => anyMatch(r.from.path, file) && !anyMatch(r.from.pathNot, file);
const rulesFrom = (file: string, prefix: string) =>
  rules.filter((r) => r.name.startsWith(prefix) && fromMatches(r, file)).map((r) => r.name);

interface Cruise {
  violations: Violation[];
  modules: string[];
  /** Imports between files of this tree (not node_modules, not Node's builtins). */
  imports: Array<[from: string, to: string]>;
}

async function cruise(cwd: string, dirs: string[]): Promise<Cruise> {
  // dependency-cruiser exits non-zero when it finds violations; the JSON is on stdout either way.
  const out = await run(process.execPath, [BIN, ...dirs, '--config', CONFIG, '--output-type', 'json'], {
    cwd,
    maxBuffer: 64 * 1024 * 1024,
  }).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
  const json = JSON.parse(out.stdout) as {
    modules: Array<{ source: string; dependencies: Array<{ resolved: string; coreModule: boolean }> }>;
    summary: { violations: Violation[] };
  };
  const ours = (f: string) => !f.includes('node_modules/') && f.includes('/');
  const imports = json.modules.flatMap((m) =>
    ours(m.source)
      ? m.dependencies.filter((d) => !d.coreModule && ours(d.resolved)).map((d): [string, string] => [m.source, d.resolved])
      : [],
  );
  return { violations: json.summary.violations, modules: json.modules.map((m) => m.source), imports };
}
/** The tree, cruised once for the tests that read it. */
let tree: Promise<Cruise> | undefined;
const cruiseTree = () => (tree ??= cruise(ROOT, [...SOURCE_DIRS, ...OTHER_DIRS]));
/**
 * Folder loops known today, each to be taken away by the change named beside it (none left: the
 * v1/{openai, anthropic, shared} layout of issue 38 took away openai ⇄ anthropic). A loop not in
 * this list fails the test.
 */
const KNOWN_FOLDER_LOOPS: string[] = [];

const describeViolation = (v: Violation) =>
  `${v.rule.name}: ${v.from} → ${v.to}${v.cycle ? ` (${v.cycle.map((c) => c.name).join(' → ')})` : ''}`;

describe('dependency rules', () => {
  it('every package and the console: no circle, no upward import, core layers and service floors in order; no circle in bench, scripts, examples and the test helpers', async () => {
    const { violations, modules } = await cruiseTree();
    // Each folder was read, not silently skipped.
    for (const dir of [...SOURCE_DIRS, ...OTHER_DIRS])
      expect(modules.filter((m) => m.startsWith(`${dir}/`)).length, dir).toBeGreaterThan(0);
    expect(modules.length).toBeGreaterThan(300);
    expect(violations.map(describeViolation)).toEqual([]);
  }, 120_000);

  it('no folder loop: at every folder, its files and subfolders import each other without a loop', async () => {
    const { imports } = await cruiseTree();
    expect(imports.length).toBeGreaterThan(1000);
    expect(folderLoops(imports).filter((loop) => !KNOWN_FOLDER_LOOPS.includes(loop))).toEqual([]);
  }, 120_000);

  it('the rules reach every package, every core folder, every service folder and every console file', () => {
    const uncovered: string[] = [];
    for (const pkg of PACKAGES) {
      if (!rulesFrom(`packages/${pkg}/src/index.ts`, `package-${pkg}`).length) uncovered.push(`package ${pkg}: no package-${pkg} rule`);
    }
    // A core folder is on a layer when a layer rule starts from it, or names it as above another (the top layer).
    for (const folder of subdirs('packages/core/src')) {
      const file = `packages/core/src/${folder}/x.ts`;
      const layered = rules.some((r) => r.name.startsWith('core-layer-') && (fromMatches(r, file) || anyMatch(r.to.path, file)));
      if (!layered) uncovered.push(`core/${folder}: on no layer of .dependency-cruiser.cjs`);
    }
    for (const folder of subdirs('packages/core/src/services')) {
      if (!rulesFrom(`packages/core/src/services/${folder}/x.ts`, `core-services-${folder}`).length)
        uncovered.push(`core/services/${folder}: on no service floor`);
    }
    // Every console file but the shell is on a floor below it (views, or the parts below the views).
    for (const file of sources(CONSOLE)) {
      if (file === `${CONSOLE}/main.ts`) continue;
      const floors = rulesFrom(file, 'console-').filter((n) => n === 'console-views-apart' || n === 'console-parts-below-views');
      if (floors.length !== 1) uncovered.push(`${file}: on ${floors.length} console floors`);
    }
    expect(uncovered).toEqual([]);
    expect(rules.find((r) => r.name === 'no-circular')).toMatchObject({ from: {}, to: { circular: true } });
  });

  it('a circle, an upward import (layer, service floor, package, console), a value import of server code in the console, zod not from lib/zod.ts, hono in core and the tRPC runtime outside core are each refused', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'ai-backend-deprules-'));
    try {
      const files: Record<string, string> = {
        'tsconfig.json': JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true } }),
        'packages/core/src/kernel/CoreError.ts': "import { charge } from '../services/billing.js';\nexport const e = charge;\n",
        'packages/core/src/services/billing.ts': "import { e } from '../kernel/CoreError.js';\nexport const charge = () => e;\n",
        'packages/auth/src/verify.ts': "import { serve } from '../../transports/src/serve.js';\nexport const verify = serve;\n",
        'packages/transports/src/serve.ts': 'export const serve = 1;\n',
        // test-utils stands apart from the packages.
        'packages/test-utils/src/kit.ts': "import { serve } from '../../transports/src/serve.js';\nexport const kit = serve;\n",
        // A service floor importing one above it: spend is below apiKeys.
        'packages/core/src/services/spend/periodSpend.ts':
          "import { keySpend } from '../apiKeys/keySpend.js';\nexport const spend = keySpend;\n",
        'packages/core/src/services/apiKeys/keySpend.ts': 'export const keySpend = 1;\n',
        // zod straight from the package instead of lib/zod.ts (which checks it is zod 4 first).
        'packages/core/src/config/raw.ts': "import { z } from 'zod';\nexport const s = z.string();\n",
        'packages/core/src/lib/zod.ts': "import { z } from 'zod';\nexport { z };\n",
        // An HTTP framework in core.
        'packages/core/src/net/serveHttp.ts': "import { Hono } from 'hono';\nexport const app = new Hono();\n",
        // tRPC's runtime outside core (core inlines it; for the others it is an optional peer): the
        // value import is refused, the type-only one beside it and core's own are not.
        'packages/transports/src/trpc/answer.ts':
          "import { TRPCError } from '@trpc/server';\nimport type { AnyRouter } from '@trpc/server';\nexport const E: unknown = TRPCError;\nexport type R = AnyRouter;\n",
        'packages/core/src/pipeline/init.ts': "import { initTRPC } from '@trpc/server';\nexport const t = initTRPC.create();\n",
        // The MCP client outside the gateway (allowed there only: its upstream connections).
        'packages/core/src/services/gateway/openUpstream.ts':
          "import { Client } from '@modelcontextprotocol/client';\nexport const C = Client;\n",
        'packages/core/src/services/ai/mcpCall.ts': "import { Client } from '@modelcontextprotocol/client';\nexport const C = Client;\n",
        // The console: a view importing the shell (a circle, as the console had), another view and a
        // part importing a view, the shell taking a value (not a type) from core.
        'packages/transports/console/src/main.ts':
          "import { meView } from './views/me.js';\nimport { e } from '../../../core/src/kernel/CoreError.js';\nimport type { charge } from '../../../core/src/services/billing.js';\nexport type View = () => void;\nexport const views: Array<typeof charge | unknown> = [meView, e];\n",
        'packages/transports/console/src/views/me.ts':
          "import type { View } from '../main.js';\nimport { usersView } from './users.js';\nexport const meView: View = usersView;\n",
        'packages/transports/console/src/views/users.ts': 'export const usersView = () => undefined;\n',
        'packages/transports/console/src/dom.ts': "import { usersView } from './views/users.js';\nexport const h = usersView;\n",
      };
      for (const [name, text] of Object.entries(files)) {
        await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
        await writeFile(path.join(dir, name), text);
      }
      // The real zod and hono: node_modules is not followed, but their modules are what the rules name.
      await mkdir(path.join(dir, 'node_modules'), { recursive: true });
      for (const pkg of ['zod', 'hono']) await symlink(path.join(ROOT, 'node_modules', pkg), path.join(dir, 'node_modules', pkg), 'dir');
      await mkdir(path.join(dir, 'node_modules/@trpc'), { recursive: true });
      await symlink(path.join(ROOT, 'node_modules/@trpc/server'), path.join(dir, 'node_modules/@trpc/server'), 'dir');
      await mkdir(path.join(dir, 'node_modules', '@modelcontextprotocol'), { recursive: true });
      await symlink(
        path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'client'),
        path.join(dir, 'node_modules', '@modelcontextprotocol', 'client'),
        'dir',
      );
      const { violations } = await cruise(dir, ['packages']);
      const found = new Set(violations.map((v) => v.rule.name));
      for (const rule of [
        'no-circular',
        'core-layer-kernel-lib',
        'package-auth',
        'package-test-utils',
        'core-no-transport',
        'console-main-on-top',
        'console-views-apart',
        'console-parts-below-views',
      ]) {
        expect(found, rule).toContain(rule);
      }
      expect(violations.filter((v) => v.rule.name.startsWith('core-services-')).map(describeViolation)).toEqual([
        'core-services-spend: packages/core/src/services/spend/periodSpend.ts → packages/core/src/services/apiKeys/keySpend.ts',
      ]);
      // The value import is refused, the type-only one beside it is not.
      expect(violations.filter((v) => v.rule.name === 'console-server-types-only').map((v) => v.to)).toEqual([
        'packages/core/src/kernel/CoreError.ts',
      ]);
      expect(violations.filter((v) => v.rule.name === 'core-zod-through-lib').map((v) => v.from)).toEqual([
        'packages/core/src/config/raw.ts',
      ]);
      expect(violations.filter((v) => v.rule.name === 'trpc-runtime-from-core').map((v) => v.from)).toEqual([
        'packages/transports/src/trpc/answer.ts',
      ]);
      expect(violations.filter((v) => v.rule.name === 'core-mcp-client-in-gateway').map((v) => v.from)).toEqual([
        'packages/core/src/services/ai/mcpCall.ts',
      ]);
      expect(violations.filter((v) => v.rule.name === 'core-no-transport').map((v) => v.from)).toEqual([
        'packages/core/src/net/serveHttp.ts',
      ]);
      // Every rule but those about the packages' own floors was shown to bite.
      const shown = new Set([...found, ...rules.filter((r) => /^(core-layer-|core-services-|package-)/.test(r.name)).map((r) => r.name)]);
      expect(rules.map((r) => r.name).filter((n) => !shown.has(n))).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
