import { describe, expect, it } from 'vitest';
import { MAX_PATH_LENGTH, isSafeName, normalizeRelative } from './pathSyntax.js';

describe('normalizeRelative (rule 1, lexical)', () => {
  it.each([
    ['', ''],
    ['.', ''],
    ['./', ''],
    ['a.txt', 'a.txt'],
    ['./a/b.txt', 'a/b.txt'],
    ['a//b///c.txt', 'a/b/c.txt'],
    ['a/./b/', 'a/b'],
    ['.env', '.env'],
    ['src/.hidden/x', 'src/.hidden/x'],
    ['100%.txt', '100%.txt'],
    ['with space/ü ñ 日本.md', 'with space/ü ñ 日本.md'],
    ['a..b/c', 'a..b/c'],
    ['..a', '..a'],
    ['emoji 😀.txt', 'emoji 😀.txt'],
  ])('accepts %j as %j', (input, expected) => {
    expect(normalizeRelative(input)).toBe(expected);
  });

  it.each([
    ['..'],
    ['../a'],
    ['a/../b'],
    ['a/..'],
    ['/etc/passwd'],
    ['//host/share'],
    ['~/x'],
    ['C:/x'],
    ['c:x'],
    ['a\\b'],
    ['a\u0000b'],
    ['a\nb'],
    ['a\u007fb'],
    ['%2e%2e/x'],
    ['a%2Fb'],
    ['%u002e'],
    ['%c0%ae'],
    ['\uFFFD'],
    ['\uD800x'],
    ['x\uDC00'],
    ['\uFF0E\uFF0E/x'],
    ['a\u2215b'],
    ['\u202Etxt.exe'],
    ['...'],
    ['x.'],
    ['x '],
    ['a/b./c'],
    ['x'.repeat(256)],
    ['a/'.repeat(MAX_PATH_LENGTH / 2 + 1)],
    // Compatibility characters that fold (NFKC) into refused syntax, found by scanning Unicode.
    ['\uFE30/x'],
    ['a/\uFE19'],
    ['\u2100'],
    ['C\uFF1A/x'],
    ['x\uFE55y'],
    ['\uFF05\u0032e\uFF05\u0032e/x'],
    ['\uFE6A2e'],
    ['\uFF5E/x'],
    ['\u2488'],
    ['a/\u33C7'],
  ])('refuses %j', (input) => {
    expect(normalizeRelative(input)).toBeNull();
  });

  it('keeps a valid surrogate pair and a 255-byte name', () => {
    expect(normalizeRelative('😀')).toBe('😀');
    expect(normalizeRelative('x'.repeat(255))).toBe('x'.repeat(255));
    // 86 three-byte characters = 258 bytes: over NAME_MAX although only 86 code units
    expect(normalizeRelative('日'.repeat(86))).toBeNull();
  });

  it('refuses every name whose compatibility form has refused syntax, and keeps other folded names', () => {
    for (let cp = 0x80; cp < 0x30000; cp++) {
      if (cp >= 0xd800 && cp < 0xe000) continue;
      const ch = String.fromCodePoint(cp);
      const folded = ch.normalize('NFKC');
      if (/[/\\:]|^\.+$|\.$/.test(folded)) expect(isSafeName(`x${ch}`), `U+${cp.toString(16)}`).toBe(false);
    }
    expect(normalizeRelative('\uFB01le.txt')).toBe('\uFB01le.txt'); // the "fi" ligature folds harmlessly
    expect(normalizeRelative('\u00BD.md')).toBe('\u00BD.md'); // ½ folds to 1⁄2 (fraction slash, not a separator)
  });

  it('isSafeName refuses separators and special names used by listFiles', () => {
    expect(isSafeName('ok.txt')).toBe(true);
    expect(isSafeName('a/b')).toBe(false);
    expect(isSafeName('.')).toBe(false);
    expect(isSafeName('..')).toBe(false);
    expect(isSafeName('')).toBe(false);
    expect(isSafeName('time 10:00.log')).toBe(false);
  });
});
