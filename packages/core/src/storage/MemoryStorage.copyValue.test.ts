import { describe, expect, it } from 'vitest';
import { copyValue } from './MemoryStorage.js';

describe('copyValue', () => {
  it('copies JSON-like values deeply, equal to structuredClone and sharing nothing', () => {
    const value: { list: unknown[]; nested: { deep: { deeper: boolean } } } & Record<string, unknown> = {
      a: 1,
      s: 'x',
      n: null,
      u: undefined,
      list: [1, { b: [2, 3] }],
      nested: { deep: { deeper: true } },
    };
    const copy = copyValue(value);
    expect(copy).toStrictEqual(structuredClone(value));
    expect(Object.keys(copy)).toEqual(Object.keys(value));
    copy.list[1] = 'changed';
    copy.nested.deep.deeper = false;
    expect(value.list[1]).toEqual({ b: [2, 3] });
    expect(value.nested.deep.deeper).toBe(true);
  });

  it('keeps an own __proto__ key (as JSON.parse makes it) a key, as structuredClone does, not a prototype', () => {
    const value = JSON.parse('{"meta":{"__proto__":{"admin":true},"x":1}}') as { meta: Record<string, unknown> };
    const copy = copyValue(value);
    expect(copy).toStrictEqual(structuredClone(value));
    expect(Object.keys(copy.meta)).toEqual(['__proto__', 'x']);
    expect(Object.getPrototypeOf(copy.meta)).toBe(Object.prototype);
    expect((copy.meta as { admin?: boolean }).admin).toBeUndefined();
  });

  it('leaves other objects to structuredClone (a Date stays a Date, a copy) and refuses functions as it does', () => {
    const at = new Date(0);
    const copy = copyValue({ at, map: new Map([[1, 2]]) });
    expect(copy.at).toBeInstanceOf(Date);
    expect(copy.at).not.toBe(at);
    expect(copy.at.getTime()).toBe(0);
    expect(copy.map.get(1)).toBe(2);
    expect(() => copyValue({ f: () => 1 })).toThrow();
  });
});
