import { describe, expect, it } from 'vitest';
import { AgedMap } from './AgedMap.js';

describe('AgedMap', () => {
  it('answers only for entries younger than maxAgeMs', () => {
    const m = new AgedMap<string, number>(1_000, 100);
    m.set('a', 1, 0);
    expect(m.get('a', 999)).toBe(1);
    expect(m.get('a', 1_000)).toBeUndefined();
  });

  it('drops aged-out entries on set, so a steady stream of new keys holds only the last maxAgeMs of them', () => {
    const m = new AgedMap<string, number>(1_000, 1_000_000);
    // 100,000 keys, one every 10 ms: a clear-at-the-ceiling map would hold all of them.
    for (let i = 0; i < 100_000; i++) m.set(`k${i}`, i, i * 10);
    expect(m.size).toBe(100);
    expect(m.get('k99999', 999_990)).toBe(99_999);
    expect(m.get('k0', 999_990)).toBeUndefined();
  });

  it('a rewritten key moves to the end and keeps living', () => {
    const m = new AgedMap<string, number>(1_000, 100);
    m.set('a', 1, 0);
    m.set('b', 2, 500);
    m.set('a', 3, 900);
    m.set('c', 4, 1_600); // b (500) ages out; a, rewritten at 900, is still young
    expect(m.get('a', 1_600)).toBe(3);
    m.set('d', 5, 1_950); // now a (900) ages out too
    expect(m.size).toBe(2);
    expect(m.get('c', 1_950)).toBe(4);
  });

  it('never holds more than capacity (oldest first)', () => {
    const m = new AgedMap<string, number>(60_000, 3);
    for (let i = 0; i < 10; i++) m.set(`k${i}`, i, i);
    expect(m.size).toBe(3);
    expect(m.get('k6', 10)).toBeUndefined();
    expect(m.get('k9', 10)).toBe(9);
  });
});
