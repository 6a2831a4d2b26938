import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * CI's offline check (scripts/check-service-skips.mjs) runs only the test files that use the shared
 * service detection, found from their imports by scripts/serviceSuites.mjs. A file that dials a
 * service without the detection would not be in that list, so the offline check could no longer
 * catch it: this test fails when any other test file names a service.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// A plain .mjs script (no types): imported by URL.
const { serviceSuites, testFiles } = (await import(new URL('../../scripts/serviceSuites.mjs', import.meta.url).href)) as {
  serviceSuites: () => string[];
  testFiles: () => string[];
};
const SERVICE_MARKERS = /\b6379\b|\b5432\b|ioredis|from 'pg'|redis-server|chromium|playwright|type: '(?:redis|postgres)'|shared: 'redis'/g;

/** Files that name a service without reaching one, and why. Checked both ways below, so it cannot go stale. */
const NAMES_ONLY: Record<string, string> = {
  'packages/core/src/config/authMode.test.ts': 'resolves configs naming a Redis store; opens nothing',
  'packages/core/src/config/fromEnv.test.ts': 'maps environment variables to storage configs; opens nothing',
  'packages/core/src/config/optionalPackages.test.ts': 'checks which driver packages a config needs; loads none of them',
  'packages/core/src/config/redact.test.ts': 'redacts connection settings in configs; opens nothing',
  'packages/core/src/config/sections/storage.test.ts': 'validates storage configs; opens nothing',
  'packages/core/src/pipeline/wireError.test.ts': 'maps a connection error (ECONNREFUSED 127.0.0.1:5432) to a wire error',
  'test/e2e/cli.test.ts': 'config print of a config naming a PostgreSQL store (its password redacted); connects to nothing',
  'test/e2e/install-npm12.test.ts': 'checks that pg and ioredis are asked for while absent, in its own network namespace',
  'test/e2e/startup-modules.test.ts': 'checks that a default server does not load ioredis',
  'test/scripts/serviceSuites.test.ts': 'this file: its pattern lists the markers',
};

const markersIn = (file: string) => [...new Set(readFileSync(path.join(root, file), 'utf8').match(SERVICE_MARKERS) ?? [])];

describe('the offline check covers every suite that names a service', () => {
  const suites = new Set(serviceSuites());
  const files = testFiles();

  it('finds the suites through their imports, helpers included', () => {
    expect(files.length).toBeGreaterThan(100);
    // Direct import of the detection, and through a helper (test/e2e/helpers/apiKeyCluster.ts).
    expect(suites).toContain('test/e2e/oauthBrowser.test.ts');
    expect(suites).toContain('test/e2e/api-keys-limits.test.ts');
    expect(suites).toContain('packages/core/src/storage/storageConformance.test.ts');
    expect(suites).not.toContain('packages/core/src/config/sections/storage.test.ts');
    for (const s of suites) expect(files).toContain(s);
  });

  it('no other test file names a service port, driver or storage type', () => {
    const unlisted = files
      .filter((f) => !suites.has(f) && !(f in NAMES_ONLY) && markersIn(f).length > 0)
      .map((f) => `${f}: ${markersIn(f).join(', ')}`);
    expect(
      unlisted,
      'use the shared detection (@ai-backend/test-utils/services) in these files, or add them to NAMES_ONLY with the reason',
    ).toEqual([]);
  });

  it('every NAMES_ONLY entry still names a service and still does not use the detection', () => {
    for (const f of Object.keys(NAMES_ONLY)) {
      expect(files, f).toContain(f);
      expect(suites.has(f), `${f} uses the detection now: remove it from NAMES_ONLY`).toBe(false);
      expect(markersIn(f).length, `${f} no longer names a service: remove it from NAMES_ONLY`).toBeGreaterThan(0);
    }
  });
});
