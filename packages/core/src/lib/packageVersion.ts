import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** What a version is said to be where no manifest can be read (a fetch runtime without files). */
export const UNKNOWN_VERSION = '0.0.0';

/**
 * The `version` of the package `name`, read from its manifest: the nearest `package.json` named
 * `name` above `moduleUrl` (the caller's `import.meta.url`). Written once in the manifest, which
 * `changeset version` bumps, instead of a literal in code that a release leaves behind. The same
 * walk finds it from `src/` (tests), from tsc's `dist/` and from a bundle or its `dist/chunks/`.
 * Never throws: where files cannot be read (a worker running `server.fetch`) it is `0.0.0`.
 */
export function packageVersion(moduleUrl: string, name: string): string {
  let dir: string;
  try {
    dir = path.dirname(fileURLToPath(moduleUrl));
  } catch {
    return UNKNOWN_VERSION; // not a file: URL
  }
  for (;;) {
    try {
      const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (manifest.name === name && typeof manifest.version === 'string') return manifest.version;
    } catch {
      // no manifest here, or not one we can read: keep going up
    }
    const up = path.dirname(dir);
    if (up === dir) return UNKNOWN_VERSION;
    dir = up;
  }
}
