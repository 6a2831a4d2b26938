import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without declarations
import { writeSbom } from '../../scripts/sbom.mjs';

/**
 * `pnpm sbom` (scripts/sbom.mjs, run by `pnpm release`): a CycloneDX SBOM of what `npm i
 * ai-backend` installs, listing every runtime dependency of the four published packages. Packs
 * the built packages and resolves them against the npm registry (lockfile only: nothing is
 * downloaded or run), so it needs the registry, as the install tests do.
 */
const ROOT = join(import.meta.dirname, '..', '..');
const PUBLISHED = { core: '@ai-backend/core', auth: '@ai-backend/auth', transports: '@ai-backend/transports', cli: 'ai-backend' };

describe('SBOM', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sbom-test-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is CycloneDX JSON listing the published packages and every runtime dependency, no dev tools', () => {
    const out = join(dir, 'sbom.cdx.json');
    writeSbom(out);
    const sbom = JSON.parse(readFileSync(out, 'utf8')) as {
      bomFormat: string;
      specVersion: string;
      components: Array<{ name: string; version: string; purl?: string }>;
    };
    expect(sbom.bomFormat).toBe('CycloneDX');
    const names = new Set(sbom.components.map((c) => c.name));
    const runtime = Object.keys(PUBLISHED).flatMap((d) =>
      Object.keys(
        (JSON.parse(readFileSync(join(ROOT, 'packages', d, 'package.json'), 'utf8')) as { dependencies?: object }).dependencies ?? {},
      ),
    );
    expect(runtime.length).toBeGreaterThan(10);
    expect(runtime.filter((n) => !names.has(n))).toEqual([]);
    for (const name of Object.values(PUBLISHED)) expect(names, name).toContain(name);
    // Each component is identified for vulnerability databases (package URL with its version).
    for (const c of sbom.components) expect(c.purl, c.name).toMatch(/^pkg:npm\/.+@.+/);
    // Dev dependencies of the monorepo are not what users install.
    for (const dev of ['vitest', 'turbo', '@changesets/cli', 'dependency-cruiser']) expect(names).not.toContain(dev);
  }, 180_000);
});
