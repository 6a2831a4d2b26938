import { describe, expect, it } from 'vitest';
import { RecentMap } from './RecentMap.js';

describe('RecentMap', () => {
  it('never holds more than its capacity; the keys used since the last pass stay, the oldest others go', () => {
    const map = new RecentMap<string, number>(16);
    for (let i = 0; i < 16; i++) map.set(`k${i}`, i);
    for (let i = 16; i < 100; i++) {
      expect(map.get('k0')).toBe(0); // in use all along
      map.set(`k${i}`, i);
      expect(map.size).toBeLessThanOrEqual(16);
      expect(map.has(`k${i}`)).toBe(true);
    }
    const kept = Array.from({ length: 100 }, (_, i) => i).filter((i) => map.has(`k${i}`));
    expect(kept[0]).toBe(0);
    // The others are the newest run: no older key outlived a newer one.
    const rest = kept.slice(1);
    expect(rest).toEqual(Array.from({ length: rest.length }, (_, i) => 100 - rest.length + i));
  });

  it('a set of a known key changes its value in place and counts as a use', () => {
    const map = new RecentMap<string, number>(2);
    map.set('a', 1);
    map.set('b', 2);
    map.set('a', 3);
    map.set('c', 4);
    expect([map.get('a'), map.get('b'), map.get('c')]).toEqual([3, undefined, 4]);
  });

  it('when every key is in use, the oldest go anyway', () => {
    const map = new RecentMap<string, number>(8);
    for (let i = 0; i < 8; i++) map.set(`k${i}`, i);
    for (let i = 0; i < 8; i++) map.get(`k${i}`);
    map.set('new', 8);
    expect(map.size).toBeLessThanOrEqual(8);
    expect(map.has('new')).toBe(true);
    expect(map.has('k0')).toBe(false);
    expect(map.delete('k7')).toBe(true);
    map.clear();
    expect(map.size).toBe(0);
  });
});
