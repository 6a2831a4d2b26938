/**
 * zod is a peer dependency (`zod@^4`). npm refuses zod 3, but `--legacy-peer-deps`/`--force`
 * install it anyway: the built `ai-backend` must then fail with an error that says what to
 * install, not with `….prefault is not a function` from a schema module (as it did).
 * A child process whose resolution sends every `zod` import to zod 3 (from this repository's
 * install, where other packages depend on it) imports the built package.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'ai-backend-zod3-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const store = join(process.cwd(), 'node_modules/.pnpm');
const zod3 = readdirSync(store).find((d) => /^zod@3\.\d+\.\d+$/.test(d));

it.runIf(zod3)('importing ai-backend with the app resolving zod 3 says zod 4 is needed', () => {
  const zod3Dir = join(store, zod3!, 'node_modules/zod/');
  expect(existsSync(join(zod3Dir, 'package.json'))).toBe(true);
  const hooks = join(dir, 'hooks.mjs');
  writeFileSync(
    hooks,
    `export async function resolve(specifier, context, next) {
  if (specifier === 'zod' || specifier.startsWith('zod/')) return next(specifier, { ...context, parentURL: ${JSON.stringify(pathToFileURL(zod3Dir).href)} });
  return next(specifier, context);
}\n`,
  );
  const register = join(dir, 'register.mjs');
  writeFileSync(register, `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`);
  const script = `import('zod').then((z) => console.log('zod ' + ('_zod' in z.z.string() ? 4 : 3))).then(() => import('ai-backend')).then(() => console.log('loaded'));`;
  const out = spawnSync(process.execPath, ['--import', pathToFileURL(register).href, '--input-type=module', '-e', script], {
    cwd: process.cwd(),
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(out.stdout).toContain('zod 3'); // the redirect works: this is zod 3
  expect(out.status).not.toBe(0);
  expect(out.stderr).toContain("ai-backend needs zod 4, but the 'zod' your app resolves is zod 3: install zod@^4");
  expect(out.stderr).not.toContain('is not a function');
});
