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
// Usage (from a package folder): node ../../scripts/bundleDist.mjs dist/index.js dist/internal.js
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { build } from 'esbuild';
import { asciiComments } from './asciiComments.mjs';

const entryPoints = process.argv.slice(2);
if (entryPoints.length === 0) throw new Error('usage: bundleDist.mjs <dist entry>...');
const { outputFiles } = await build({
  entryPoints,
  outdir: 'dist',
  allowOverwrite: true,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // Only relative imports are ours; everything imported by name is a dependency.
  packages: 'external',
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
// Written here rather than by esbuild: comments made ASCII (asciiComments.mjs) so V8 keeps each
// file's source as a one-byte string. Comment lines carry no mappings, so the source maps hold.
for (const file of outputFiles) {
  await mkdir(path.dirname(file.path), { recursive: true });
  await writeFile(file.path, file.path.endsWith('.js') ? asciiComments(file.text, path.relative(process.cwd(), file.path)) : file.contents);
}
