#!/usr/bin/env node
// Comment lines longer than the formatter's line width (biome.json, 140), which Biome leaves as they
// are: wraps them at word boundaries, continuing with the same indentation and comment marker
// (`//`, ` *`; a one-line `/** … */` becomes a block). Lines of code that Biome cannot wrap either
// (long strings, templates, regular expressions) are only counted.
//
// Usage: node scripts/wrapLongComments.mjs [--check]   (--check: change nothing, exit 1 if a comment line is too long)
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const WIDTH = JSON.parse(readFileSync(path.join(root, 'biome.json'), 'utf8')).formatter.lineWidth;
const EXCLUDED = new Set(['packages/core/src/config/sectionDefaults.ts']);

/** Split `text` into pieces no longer than `room` at spaces (a single longer word stays whole). */
function wrapWords(text, room) {
  const lines = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + 1 + word.length > room) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}

/** The wrapped replacement of one over-long comment line, or undefined when it is not a whole-line comment. */
export function wrapCommentLine(line, width = WIDTH) {
  let m = /^(\s*)\/\*\* (.*?) \*\/$/.exec(line);
  if (m) return [`${m[1]}/**`, ...wrapWords(m[2], width - m[1].length - 3).map((w) => `${m[1]} * ${w}`), `${m[1]} */`];
  m = /^(\s*(?:\/\/|\*)\s?)(.*)$/.exec(line);
  if (!m || /^\s*\*\//.test(line)) return undefined;
  const [, prefix, text] = m;
  const lead = /^(\s*(?:[-*]|\d+\.)\s+)/.exec(text)?.[1] ?? ''; // a list item's continuation lines are indented under its text
  const pieces = wrapWords(text, width - prefix.length);
  if (pieces.length < 2 || pieces.some((p) => prefix.length + p.length > width)) {
    if (pieces.length < 2) return undefined;
  }
  return pieces.map((p, i) => (i === 0 ? prefix + p : prefix + ' '.repeat(lead.length) + p)).map((l) => l.replace(/\s+$/, ''));
}

function main() {
  const check = process.argv.includes('--check');
  const files = execFileSync('git', ['ls-files', '*.ts', '*.mts', '*.js', '*.mjs'], { cwd: root, encoding: 'utf8' })
    .split('\n')
    .filter((f) => f && !EXCLUDED.has(f) && !f.includes('/dist/'));
  let comments = 0;
  let code = 0;
  for (const f of files) {
    const abs = path.join(root, f);
    const lines = readFileSync(abs, 'utf8').split('\n');
    let changed = false;
    const out = [];
    for (const line of lines) {
      if (line.length <= WIDTH) {
        out.push(line);
        continue;
      }
      const wrapped = wrapCommentLine(line);
      if (wrapped) {
        comments++;
        if (check) console.log(`${f}: comment line of ${line.length} characters`);
        out.push(...wrapped);
        changed = true;
      } else {
        code++;
        out.push(line);
      }
    }
    if (changed && !check) writeFileSync(abs, out.join('\n'));
  }
  console.log(
    `wrapLongComments: ${comments} comment line(s) over ${WIDTH} characters${check ? '' : ' wrapped'}; ${code} line(s) of code over ${WIDTH} that the formatter cannot wrap (strings, templates, regular expressions)`,
  );
  if (check && comments > 0) process.exit(1);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
