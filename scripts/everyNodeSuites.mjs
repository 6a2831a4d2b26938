#!/usr/bin/env node
// The test files CI runs on every Node version, not only on the primary one (docs/testing.md,
// "CI: phases and times"): every test under packages/*/src (the code a user's Node runs), and the
// files under test/ and examples/ whose first line is the `@every-node` tag: the end-to-end suites
// of the entry points (/trpc, /rpc, /mcp, /v1, OAuth, API keys, the CLI, the packed install) and
// the native SQLite binary's switching. A new entry-point suite joins by carrying the tag.
//
// Usage: node scripts/everyNodeSuites.mjs   (prints one path a line, relative to the repository root)
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { testFiles } from './serviceSuites.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const TAG = '// @every-node:';

export function everyNodeSuites() {
  return testFiles().filter((f) => /^packages\/[^/]+\/src\//.test(f) || readFileSync(path.join(root, f), 'utf8').startsWith(TAG));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const f of everyNodeSuites()) console.log(f);
}
