import { describe, expect, it } from 'vitest';

// A plain .mjs build script (no types): imported by URL.
const { asciiComments } = (await import(new URL('../../scripts/asciiComments.mjs', import.meta.url).href)) as {
  asciiComments: (text: string, file?: string) => string;
};

describe('asciiComments (bundleDist)', () => {
  it('leaves ASCII text as it is', () => {
    const text = 'const a = "\\u2192";\n/** plain */\nfoo();\n';
    expect(asciiComments(text)).toBe(text);
  });

  it('escapes non-ASCII characters in comment lines only, line by line', () => {
    const text = ['  /**', '   * A presented `aib_…` key → its owner', '   */', '  verify(token) {', '  // 1 µs 🙂', '}'].join('\n');
    const out = asciiComments(text);
    expect(out).toMatch(/^[\x00-\x7f]*$/);
    expect(out.split('\n')).toEqual([
      '  /**',
      '   * A presented `aib_\\u{2026}` key \\u{2192} its owner',
      '   */',
      '  verify(token) {',
      '  // 1 \\u{b5}s \\u{1f642}',
      '}',
    ]);
  });

  it('refuses non-ASCII outside a comment (esbuild escapes those; one left means a changed esbuild default)', () => {
    expect(() => asciiComments('const arrow = "→";', 'x.js')).toThrow('x.js:1: non-ASCII character outside a comment');
    expect(() => asciiComments('/* → */ run();', 'x.js')).toThrow('x.js:1');
  });
});
