import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { requestIdV7 } from './requestIdV7.js';

describe('requestIdV7', () => {
  it('is a version 7 UUID whose first 48 bits are the time in milliseconds', () => {
    const at = Date.UTC(2026, 11, 3, 7, 0, 0, 123);
    const id = requestIdV7(at);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(z.uuid().safeParse(id).success).toBe(true);
    expect(Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(at);
  });

  it('sorts by time (byte order, as the stores keep keys) and never repeats', () => {
    const t = Date.now();
    const ids = [t + 2, t, t + 1, t + 1000 * 3600 * 24 * 365].map((at) => requestIdV7(at));
    expect([...ids].sort()).toEqual([ids[1], ids[2], ids[0], ids[3]]);
    const many = new Set(Array.from({ length: 10_000 }, () => requestIdV7(t)));
    expect(many.size).toBe(10_000);
  });
});
