#!/usr/bin/env node
// Part of a package's build, after tsc: bundle the package's own modules behind each public
// entry point into one file per entry (shared code in dist/chunks/, lazily imported modules in
// chunks of their own), in place of tsc's per-file output for those entries. Dependencies,
// including the other workspace packages, stay external imports, so every package keeps one
// copy of each module and a class shared by two entries is still one class.
//
// Why: Node 20 resolves, reads and links every ES module on its own, and a server's start-up
// loaded about 300 of ours; bundled, the same code starts in about a third less CPU
// (docs/performance.md, "tRPC path, cold start and idle memory, second pass"). tsc's .d.ts files and per-file .js stay
// as they are (types and deep imports in benches keep working; the exports map only reaches
// the entries). Source maps chain through tsc's to the shipped src/*.ts.
//
//
// `--inline <package>` bundles that dependency into the output instead (core inlines
// @trpc/server: its manifest requires `typescript` as a peer, 31 MiB that npm installs for every
// user; inlined, @trpc/server is an optional peer needed only for types. docs/publishing.md,
// "Install size and time"). Its code goes where our modules use it, its license to
// dist/licenses/, and its own source maps are not followed (they name its src/*.ts, which is not
// shipped): the bundle's map points at its dist file, with the content embedded.
//
// Usage (from a package folder): node ../../scripts/bundleDist.mjs [--inline <package>]... dist/index.js dist/internal.js
import { readdirSync, readFileSync } from 'node:fs';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { build } from 'esbuild';
import { asciiComments } from './asciiComments.mjs';
import { fastObjectSpread } from './objectSpread.mjs';

const args = process.argv.slice(2);
const inline = [];
const entryPoints = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--inline') inline.push(args[++i]);
  else entryPoints.push(args[i]);
}
if (entryPoints.length === 0 || inline.some((p) => !p)) throw new Error('usage: bundleDist.mjs [--inline <package>]... <dist entry>...');
const isInlined = (spec) => inline.some((p) => spec === p || spec.startsWith(`${p}/`));
const inlinedFile = (file) => inline.some((p) => file.includes(`/node_modules/${p}/`));

/** Inlined modules whose object-spread helper was replaced (objectSpread.mjs). */
let spreadHelpers = 0;

/** The text of every module (.js, .mjs) of the inlined package `file` belongs to, its own node_modules left out. */
function packageModules(file) {
  const p = inline.find((name) => file.includes(`/node_modules/${name}/`));
  const marker = `/node_modules/${p}/`;
  const root = file.slice(0, file.lastIndexOf(marker) + marker.length);
  const texts = [];
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name !== 'node_modules') walk(full);
      } else if (/\.m?js$/.test(e.name)) texts.push(readFileSync(full, 'utf8'));
    }
  };
  walk(root);
  return texts;
}
/** Everything imported by name stays an import, except the --inline packages. */
const externals = {
  name: 'externals',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (a) => (isInlined(a.path) ? undefined : { path: a.path, external: true }));
    // An inlined package's own source maps name files it does not ship in our tarball: drop the
    // link. Its compiler's object-spread helper becomes the engine's spread (objectSpread.mjs).
    b.onLoad({ filter: /\.m?js$/ }, async (a) => {
      if (!inlinedFile(a.path)) return undefined;
      const { text, replaced } = fastObjectSpread(await readFile(a.path, 'utf8'), () => packageModules(a.path));
      if (replaced) spreadHelpers++;
      return { contents: text.replace(/^\/\/# sourceMappingURL=.*$/m, ''), loader: 'js' };
    });
  },
};
const { outputFiles } = await build({
  entryPoints,
  outdir: 'dist',
  allowOverwrite: true,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // Only relative imports are ours; everything imported by name is a dependency (but --inline).
  plugins: [externals],
  chunkNames: 'chunks/[name]-[hash]',
  sourcemap: true,
  // Whitespace and syntax only: V8 keeps every loaded module's source text for as long as the
  // process runs, and a server that starts loads ~500 kB of ours; minified it is ~350 kB and a
  // default server idles 0.5 MB smaller (docs/performance.md, "Tenth session"). Identifiers stay
  // as written, so stack traces name our functions; the source maps lead back to src/*.ts.
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
  write: false,
});
// tRPC's dist has carried the helper in one module; a release without it (a new compiler, a new
// target) fails the build here rather than losing the fast spread unnoticed.
if (inline.includes('@trpc/server') && spreadHelpers === 0)
  throw new Error('bundleDist: no object-spread helper found in the inlined @trpc/server (scripts/objectSpread.mjs)');
// Written here rather than by esbuild: comments made ASCII (asciiComments.mjs) so V8 keeps each
// file's source as a one-byte string. Comment lines carry no mappings, so the source maps hold.
// The maps name the shipped src/*.ts without a second copy of their text (shippedSources).
for (const file of outputFiles) {
  await mkdir(path.dirname(file.path), { recursive: true });
  await writeFile(
    file.path,
    file.path.endsWith('.js')
      ? asciiComments(file.text, path.relative(process.cwd(), file.path))
      : file.path.endsWith('.map')
        ? shippedSources(file.text)
        : file.contents,
  );
}

/**
 * A bundle's map as it ships. Our own sources are files of the tarball (`src/*.ts`, which `files`
 * ships for the maps), so their text is not embedded as well: embedded, it was a second copy of
 * `src/` (2.7 MB of core's 7.6, docs/publishing.md, "Install size and time"). A source in an
 * inlined package is a path into this checkout's node_modules/.pnpm (not shipped, different on
 * every machine): it is named `inlined:<package>/<file>` instead and keeps its embedded content,
 * which check-packages.mjs requires of such a source (and refuses for a shipped one).
 */
function shippedSources(text) {
  const map = JSON.parse(text);
  const inlined = map.sources.map((src) => inlinedFile(`/${src}`));
  map.sources = map.sources.map((src, i) =>
    inlined[i] ? `inlined:${src.slice(src.lastIndexOf('/node_modules/') + '/node_modules/'.length)}` : src,
  );
  if (inlined.some(Boolean)) map.sourcesContent = map.sources.map((_, i) => (inlined[i] ? (map.sourcesContent?.[i] ?? null) : null));
  else delete map.sourcesContent;
  return JSON.stringify(map);
}

// An inlined package's license travels with its code (MIT and the like ask for the notice).
const require = createRequire(path.resolve('package.json'));
for (const pkg of inline) {
  const dir = path.dirname(require.resolve(`${pkg}/package.json`));
  const { version, license } = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
  await mkdir('dist/licenses', { recursive: true });
  await copyFile(path.join(dir, 'LICENSE'), `dist/licenses/${pkg.replace('/', '__')}.LICENSE`);
  console.log(`bundleDist: inlined ${pkg}@${version} (${license})`);
}
