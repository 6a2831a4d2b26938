import { describe, expect, it } from 'vitest';
import { TxValueCache } from './TxValueCache.js';

const row = (value: string) => ({ value, version: '1' });

describe('TxValueCache', () => {
  it('keeps at most its capacity, the least recently used going first', () => {
    const cache = new TxValueCache(16);
    const now = 1_000;
    for (let i = 0; i < 16; i++) cache.remember(`k${i}`, row(`v${i}`), undefined, now);
    // Used again: k0 is now the most recently used.
    expect(cache.guess('k0', now).value).toBe('v0');
    for (let i = 16; i < 40; i++) {
      cache.remember(`k${i}`, row(`v${i}`), undefined, now);
      cache.guess('k0', now);
      expect(cache.has(`k${i}`)).toBe(true);
    }
    const kept = Array.from({ length: 40 }, (_, i) => `k${i}`).filter((k) => cache.has(k));
    expect(kept.length).toBeLessThanOrEqual(16);
    expect(kept).toContain('k0');
    expect(kept).toContain('k39');
    // What is kept is the most recent run of keys: no older key outlived a newer one.
    const rest = kept.filter((k) => k !== 'k0').map((k) => Number(k.slice(1)));
    expect(rest).toEqual(Array.from({ length: rest.length }, (_, i) => 40 - rest.length + i));
  });

  it('a guess past its row expiry or older than maxAgeMs is absent, a forgotten key unknown', () => {
    const cache = new TxValueCache(100, 60_000);
    cache.remember('expiring', row('a'), 2_000, 1_000);
    cache.remember('old', row('b'), undefined, 1_000);
    cache.remember('gone', row('c'), undefined, 1_000);
    expect(cache.guess('expiring', 1_999).value).toBe('a');
    expect(cache.guess('expiring', 2_000).value).toBeUndefined();
    expect(cache.guess('old', 61_000).value).toBe('b');
    expect(cache.guess('old', 61_001).value).toBeUndefined();
    cache.forget('gone');
    expect(cache.has('gone')).toBe(false);
    expect(cache.guess('gone', 1_000)).toEqual({ value: undefined, version: undefined });
  });
});
