/**
 * The README and docs/ link to each other by section (`file.md#anchor`) and to files of the
 * repository. A heading renamed or a section moved (docs/performance.md's history into
 * docs/perf-log/) leaves a link that GitHub opens at the top of the page, or a 404: every relative
 * link must name a file that exists and, with an anchor, a heading of that file (GitHub's slugs,
 * from github-slugger, the library GitHub's own renderer follows).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import GithubSlugger from 'github-slugger';
import { describe, expect, it } from 'vitest';

const root = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return markdownFiles(full);
    return name.endsWith('.md') ? [full] : [];
  });
}

/** The text outside fenced code blocks, where a heading is a heading. */
function outsideFences(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}

/** The text outside fenced code blocks and inline code, where a link is a link. */
export function prose(text: string): string {
  return outsideFences(text).replace(/`[^`\n]*`/g, '');
}

/** The anchors GitHub gives a file's headings (repeated headings get -1, -2 …). */
export function anchorsOf(text: string): Set<string> {
  const slugger = new GithubSlugger();
  const anchors = new Set<string>();
  for (const m of outsideFences(text).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) anchors.add(slugger.slug(m[1]!));
  return anchors;
}

/** Relative links of a Markdown text: `[text](target)`, without external addresses. */
export function relativeLinks(text: string): string[] {
  const links: string[] = [];
  for (const m of prose(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const target = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: …
    links.push(target);
  }
  return links;
}

describe('links between the docs', () => {
  it('reads GitHub anchors and relative links the way GitHub does', () => {
    const doc = '# Operations: `apiDescription`, `console`\n## Why? (issue 41)\n## Why? (issue 41)\n```sh\n# not a heading\n```\n';
    expect([...anchorsOf(doc)]).toEqual(['operations-apidescription-console', 'why-issue-41', 'why-issue-41-1']);
    expect(relativeLinks('[a](b.md#c) [x](https://e.org) `[no](d.md)` [t](e.md "title")')).toEqual(['b.md#c', 'e.md']);
  });

  const files = [path.join(root, 'README.md'), ...markdownFiles(path.join(root, 'docs'))];
  const anchors = new Map<string, Set<string>>();
  const anchorsFor = (file: string) => {
    let a = anchors.get(file);
    if (!a) anchors.set(file, (a = anchorsOf(readFileSync(file, 'utf8'))));
    return a;
  };

  it('every relative link names a file that exists and, with an anchor, one of its headings', () => {
    const broken: string[] = [];
    for (const file of files) {
      for (const link of relativeLinks(readFileSync(file, 'utf8'))) {
        const [target, anchor] = link.split('#', 2) as [string, string | undefined];
        const resolved = target ? path.resolve(path.dirname(file), decodeURIComponent(target)) : file;
        const where = `${path.relative(root, file)}: (${link})`;
        if (!existsSync(resolved)) {
          broken.push(`${where}: no such file`);
          continue;
        }
        if (anchor && resolved.endsWith('.md') && !anchorsFor(resolved).has(decodeURIComponent(anchor).toLowerCase()))
          broken.push(`${where}: no such heading`);
      }
    }
    expect(broken).toEqual([]);
  });
});
