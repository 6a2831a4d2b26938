import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { packageVersion, UNKNOWN_VERSION } from './packageVersion.js';

const root = mkdtempSync(path.join(tmpdir(), 'package-version-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('packageVersion', () => {
  it("reads this package's manifest from its source", () => {
    const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(packageVersion(import.meta.url, '@ai-backend/core')).toBe(manifest.version);
  });

  it('walks up past manifests of other names (a nested one, as in node_modules) to the one named', () => {
    const pkg = path.join(root, 'node_modules', 'ai-backend');
    mkdirSync(path.join(pkg, 'dist', 'chunks', 'deeper'), { recursive: true });
    writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'the-app', version: '1.0.0' }));
    writeFileSync(path.join(pkg, 'package.json'), JSON.stringify({ name: 'ai-backend', version: '3.4.5' }));
    // A manifest without the name (as some bundlers leave in dist/) is passed over.
    writeFileSync(path.join(pkg, 'dist', 'package.json'), JSON.stringify({ type: 'module' }));
    const chunk = pathToFileURL(path.join(pkg, 'dist', 'chunks', 'deeper', 'x.js')).href;
    expect(packageVersion(chunk, 'ai-backend')).toBe('3.4.5');
    expect(packageVersion(chunk, 'the-app')).toBe('1.0.0');
  });

  it('never throws: no such package, or a module that is not a file', () => {
    expect(packageVersion(pathToFileURL(path.join(root, 'x.js')).href, 'not-there')).toBe(UNKNOWN_VERSION);
    expect(packageVersion('https://example.com/worker.js', 'ai-backend')).toBe(UNKNOWN_VERSION);
  });
});
