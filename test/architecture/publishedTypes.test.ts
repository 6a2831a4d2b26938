import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The published declarations must not name an optional peer's types: an app that does not install
 * the peer (most install only the drivers of their own store, and no MCP client) type-checks against
 * ours with `skipLibCheck: false` and fails on an import it cannot resolve. install-smoke proves the
 * same on the packed packages in minutes; this reads the built `dist` in milliseconds, so the
 * mistake (a type moved into a file that imports the peer) is named where it is made.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** Every package's optional peers (read from the manifests, so a new one is covered). */
const OPTIONAL_PEERS = [
  ...new Set(
    ['core', 'transports', 'auth', 'cli'].flatMap((p) => {
      const manifest = JSON.parse(readFileSync(path.join(root, 'packages', p, 'package.json'), 'utf8'));
      const meta: Record<string, { optional?: boolean }> = manifest.peerDependenciesMeta ?? {};
      // @trpc/server is the exception: its code is inlined into core, and its types are what a
      // typed @trpc/client needs anyway (that client depends on it), so our router types name it.
      return Object.entries(meta).flatMap(([name, m]) => (m.optional && name !== '@trpc/server' ? [name] : []));
    }),
  ),
];
const ENTRIES = [
  'core/dist/index.d.ts',
  'core/dist/internal.d.ts',
  'transports/dist/index.d.ts',
  'auth/dist/index.d.ts',
  'cli/dist/index.d.ts',
];

/** Every declaration file reachable from `entry` by relative imports, and the optional peers each names. */
function peerImports(entry: string): string[] {
  const seen = new Set<string>();
  const found: string[] = [];
  const walk = (file: string, from: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const m of readFileSync(file, 'utf8').matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)) {
      const spec = m[1]!;
      const peer = OPTIONAL_PEERS.find((p) => spec === p || spec.startsWith(`${p}/`));
      if (peer) found.push(`${path.relative(root, file)} imports ${spec} (reached from ${path.relative(root, from)})`);
      if (!spec.startsWith('.')) continue;
      const asFile = path.resolve(path.dirname(file), spec.replace(/\.js$/, '.d.ts'));
      const asDir = path.resolve(path.dirname(file), spec, 'index.d.ts');
      const next = existsSync(asFile) ? asFile : existsSync(asDir) ? asDir : undefined;
      if (next) walk(next, file);
    }
  };
  walk(entry, entry);
  return found;
}

describe('published declarations', () => {
  const entries = ENTRIES.map((e) => path.join(root, 'packages', e));
  it.skipIf(!entries.every((e) => existsSync(e)))('name no optional peer package (built dist)', () => {
    expect([...new Set(entries.flatMap(peerImports))]).toEqual([]);
  });
});
