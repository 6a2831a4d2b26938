import { describe, expect, it } from 'vitest';
import { canonicalJson } from './canonicalJson.js';

/** The reference: JSON.stringify with a replacer that sorts every object's keys (what canonicalJson always meant). */
const reference = (value: unknown) =>
  JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  });

/** A small deterministic random source, so a failure names its seed. */
function random(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const KEYS = ['a', 'b', 'z', 'A', '0', '1', '10', '2', '4294967295', '-1', '01', 'é', '😀', '', 'toString', 'byModel', 'a b'];

function value(rand: () => number, depth: number): unknown {
  const r = rand();
  if (depth > 4 || r < 0.3) {
    const p = [null, true, false, 0, -0, 1.5, -7, 1e21, Number.NaN, Infinity, 'x', 'é"\\\n', '\ud800', undefined][Math.floor(rand() * 14)];
    return p;
  }
  if (r < 0.5) return Array.from({ length: Math.floor(rand() * 4) }, () => value(rand, depth + 1));
  const o: Record<string, unknown> = {};
  for (let i = Math.floor(rand() * 6); i > 0; i--) o[KEYS[Math.floor(rand() * KEYS.length)]!] = value(rand, depth + 1);
  return o;
}

describe('canonicalJson', () => {
  it('gives the reference text for 5,000 random values (integer-like keys, unicode, NaN, -0, undefined, nesting)', () => {
    for (let seed = 1; seed <= 5000; seed++) {
      const v = value(random(seed), 0);
      if (v === undefined) continue;
      expect(canonicalJson(v), `seed ${seed}`).toBe(reference(v));
    }
  });

  it('gives the reference text for what is not plain data: toJSON, class instances, boxed primitives, __proto__, null prototypes, deep nesting', () => {
    class Point {
      constructor(
        readonly y: number,
        readonly x: number,
      ) {}
    }
    let deep: unknown = { z: 1, a: 2 };
    for (let i = 0; i < 100; i++) deep = { n: i, child: deep };
    const nullProto = Object.assign(Object.create(null) as Record<string, unknown>, { b: 1, a: 2 });
    const cases: unknown[] = [
      { when: new Date(0), b: 1, a: 2 },
      { b: { toJSON: () => ({ z: 1, a: 2 }) }, a: 1 },
      new Point(1, 2),
      { p: new Point(3, 4), m: new Map([['k', 1]]) },
      { s: new String('x'), n: new Number(2), t: new Boolean(true) },
      JSON.parse('{"b":1,"__proto__":{"x":1},"a":2}'),
      JSON.parse('{"__proto__":5,"a":1}'),
      nullProto,
      deep,
      [undefined, () => 1, Symbol('s')],
      { f: () => 1, u: undefined, a: [1, { c: 3, b: 2 }] },
    ];
    for (const v of cases) expect(canonicalJson(v)).toBe(reference(v));
  });

  it('leaves the value as it was, and refuses what JSON cannot hold', () => {
    const v = { b: [{ d: 1, c: 2 }], a: 1 };
    const before = JSON.stringify(v);
    expect(canonicalJson(v)).toBe('{"a":1,"b":[{"c":2,"d":1}]}');
    expect(JSON.stringify(v)).toBe(before);
    expect(() => canonicalJson(undefined)).toThrow(/JSON-serialisable/);
    expect(() => canonicalJson(() => 1)).toThrow(/JSON-serialisable/);
    expect(() => canonicalJson({ n: 1n })).toThrow(TypeError);
  });
});
