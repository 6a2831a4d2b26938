import { describe, expect, it } from 'vitest';
import { API_KEY_PATTERN, ApiKeyHasher, crc32 } from './apiKeyFormat.js';

const hasher = new ApiKeyHasher(Buffer.from('x'.repeat(32)));
const other = new ApiKeyHasher(Buffer.from('y'.repeat(32)));

describe('API key format', () => {
  it('mints aib_ keys that a scanner regex and our parser recognise', () => {
    const { key, id } = hasher.mint();
    expect(key).toMatch(API_KEY_PATTERN);
    expect(key.startsWith(`aib_${id}`)).toBe(true);
    expect(hasher.parse(key)).toBe(id);
    expect(hasher.mint().key).not.toBe(key);
  });

  it('CRC-32 matches the IEEE check value', () => {
    expect(crc32('123456789')).toBe(0xcbf43926);
  });

  it('refuses truncated, extended, mistyped, wrong-checksum and foreign keys', () => {
    const { key } = hasher.mint();
    expect(hasher.parse(key.slice(0, -1))).toBeNull();
    expect(hasher.parse(`${key}A`)).toBeNull();
    const flipped = key.slice(0, 20) + (key[20] === 'A' ? 'B' : 'A') + key.slice(21);
    expect(hasher.parse(flipped)).toBeNull();
    const badSum = key.slice(0, -1) + (key.at(-1) === '0' ? '1' : '0');
    expect(hasher.parse(badSum)).toBeNull();
    // Another deployment's key: well-formed, valid checksum, but its id tag is not ours.
    expect(other.parse(key)).toBeNull();
    for (const junk of ['', 'aib_', 'sk-abc', `aib_${'!'.repeat(50)}`, `AIB_${key.slice(4)}`, key.replace('aib_', 'aib-')])
      expect(hasher.parse(junk)).toBeNull();
  });

  it('stores only a keyed hash and compares it in full', () => {
    const { key } = hasher.mint();
    const h = hasher.hash(key);
    expect(h).not.toContain(key.slice(16));
    expect(hasher.matches(key, h)).toBe(true);
    expect(other.matches(key, h)).toBe(false);
    expect(hasher.matches(hasher.mint().key, h)).toBe(false);
    expect(hasher.matches(key, h.slice(1))).toBe(false);
  });
});
