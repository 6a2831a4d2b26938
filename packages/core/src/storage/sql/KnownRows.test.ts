import { describe, expect, it } from 'vitest';
import { KnownRows, type Row } from './KnownRows.js';

const row = (key: string, value: string): Row => ({ key, value, expires_at: null, due_at: null });

describe('KnownRows', () => {
  it('tells a known row, a key known absent and an unknown key apart', () => {
    const known = new KnownRows();
    known.set('a', row('a', '1'));
    known.set('b', null);
    expect(known.get('a')).toEqual(row('a', '1'));
    expect(known.get('b')).toBeNull();
    expect(known.get('c')).toBeUndefined();
    known.forget('a');
    expect(known.get('a')).toBeUndefined();
  });

  it('keeps no row over the value bound, and forgets what it knew of that key', () => {
    const known = new KnownRows(10, 1000, 8);
    known.set('k', row('k', 'short'));
    known.set('k', row('k', 'much too long'));
    expect(known.get('k')).toBeUndefined();
  });

  it('starts again empty past its row or character bound', () => {
    const byRows = new KnownRows(3, 1000, 100);
    for (const k of ['a', 'b', 'c']) byRows.set(k, null);
    expect(byRows.size).toBe(3);
    byRows.set('d', null);
    expect([byRows.size, byRows.get('a'), byRows.get('d')]).toEqual([1, undefined, null]);

    const byChars = new KnownRows(100, 10, 100);
    byChars.set('a', row('a', '123456'));
    byChars.set('a', row('a', '1234567')); // a rewrite replaces its own characters
    byChars.set('b', row('b', '123'));
    expect(byChars.size).toBe(2);
    byChars.set('c', row('c', '1'));
    expect([byChars.size, byChars.get('a'), byChars.get('c')?.value]).toEqual([1, undefined, '1']);
  });
});
