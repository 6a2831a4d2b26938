#!/usr/bin/env node
// Builds the web console into dist/console (shipped in the published package, served at /console):
// one minified ES module (the console plus uPlot), one stylesheet, index.html. No source maps (their
// sources would have to ship too). Fails when the first view's assets exceed the bundle budget.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

/** Most gzipped bytes the first view may load (index.html, app.js, app.css). */
export const BUNDLE_BUDGET_BYTES = 200 * 1024;

const pkg = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const src = path.join(pkg, 'console');
const out = path.join(pkg, 'dist', 'console');
mkdirSync(out, { recursive: true });

await build({
  entryPoints: [path.join(src, 'src', 'main.ts')],
  outfile: path.join(out, 'app.js'),
  bundle: true,
  format: 'esm',
  minify: true,
  target: 'es2020',
  platform: 'browser',
  legalComments: 'none',
  logLevel: 'warning',
});
const uplotCss = readFileSync(path.join(path.dirname(createRequire(import.meta.url).resolve('uplot')), 'uPlot.min.css'), 'utf8');
writeFileSync(path.join(out, 'app.css'), readFileSync(path.join(src, 'app.css'), 'utf8') + '\n' + uplotCss);
copyFileSync(path.join(src, 'index.html'), path.join(out, 'index.html'));
// favicon.svg is named in index.html; favicon.ico is what browsers ask any other page's origin for (GET /favicon.ico).
for (const icon of ['favicon.svg', 'favicon.ico']) copyFileSync(path.join(src, icon), path.join(out, icon));

const sizes = Object.fromEntries(['index.html', 'app.js', 'app.css'].map((f) => [f, gzipSync(readFileSync(path.join(out, f))).length]));
const total = Object.values(sizes).reduce((a, b) => a + b, 0);
writeFileSync(path.join(out, 'bundle-size.json'), JSON.stringify({ gzipBytes: sizes, total, budget: BUNDLE_BUDGET_BYTES }, null, 2) + '\n');
if (total > BUNDLE_BUDGET_BYTES) {
  console.error(`console bundle: ${total} bytes gzipped, over the budget of ${BUNDLE_BUDGET_BYTES}`);
  process.exit(1);
}
console.log(`console bundle: ${(total / 1024).toFixed(1)} KB gzipped (budget ${BUNDLE_BUDGET_BYTES / 1024} KB)`);
