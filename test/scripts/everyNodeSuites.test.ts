import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

/**
 * CI runs on every Node version only what scripts/everyNodeSuites.mjs selects: the package tests
 * and the test/ files tagged on their first line. A tag anywhere else would be ignored without a
 * word, and the file would silently run on Node 24 alone: this test fails instead.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// Plain .mjs scripts (no types): imported by URL.
const { everyNodeSuites, TAG } = (await import(new URL('../../scripts/everyNodeSuites.mjs', import.meta.url).href)) as {
  everyNodeSuites: () => string[];
  TAG: string;
};
const { testFiles } = (await import(new URL('../../scripts/serviceSuites.mjs', import.meta.url).href)) as { testFiles: () => string[] };

it('selects every package test and the tagged entry-point suites, and a tag is only ever on a first line', () => {
  const selected = new Set(everyNodeSuites());
  const all = testFiles();
  for (const file of all.filter((f) => f.startsWith('packages/'))) expect(selected, file).toContain(file);
  for (const file of all.filter((f) => !f.startsWith('packages/'))) {
    const text = readFileSync(path.join(root, file), 'utf8');
    const tagged = text.startsWith(TAG);
    expect(selected.has(file), file).toBe(tagged);
    // This file names the tag in its own text, as a string, never as a comment line.
    expect(tagged || !text.split('\n').some((line) => line.startsWith(TAG)), `${file}: the tag must be its first line`).toBe(true);
  }
  // The entry points every Node must run (docs/testing.md, "CI: phases and times").
  for (const file of [
    'test/e2e/entrypoints.test.ts',
    'test/e2e/install-smoke.test.ts',
    'test/e2e/cli.test.ts',
    'test/scripts/sqliteBinary.test.ts',
  ])
    expect(selected, file).toContain(file);
});
