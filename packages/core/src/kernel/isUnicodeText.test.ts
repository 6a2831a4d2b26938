import { describe, expect, it } from 'vitest';
import { isUnicodeText } from './isUnicodeText.js';

describe('isUnicodeText', () => {
  it('refuses unpaired surrogates wherever they stand', () => {
    for (const s of ['\ud800', 'a\udbffb', '\udc00', 'x\udfff', '\ude00\ud83d', '\ud83d\u0041'])
      expect(isUnicodeText(s), JSON.stringify(s)).toBe(false);
  });
  it('accepts text, surrogate pairs included', () => {
    for (const s of ['', 'plain', 'émoji 😀', '\ud83d\ude00', '中文', '\u0000']) expect(isUnicodeText(s), JSON.stringify(s)).toBe(true);
  });
});
