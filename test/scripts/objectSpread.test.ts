import { describe, expect, it } from 'vitest';

// A plain .mjs build script (no types): imported by URL.
const { fastObjectSpread, FAST_HELPER, OXC_HELPER } = (await import(new URL('../../scripts/objectSpread.mjs', import.meta.url).href)) as {
  fastObjectSpread: (text: string) => { text: string; replaced: boolean };
  FAST_HELPER: string;
  OXC_HELPER: string;
};

/** The helper `source` defines, with the two functions it uses as tRPC's dist defines them. */
function helper(source: string): (...args: unknown[]) => Record<PropertyKey, unknown> {
  const support = `function ownKeys(e, r) {
    var t = Object.keys(e);
    if (Object.getOwnPropertySymbols) {
      var o = Object.getOwnPropertySymbols(e);
      r && (o = o.filter(function(r) { return Object.getOwnPropertyDescriptor(e, r).enumerable; })), t.push.apply(t, o);
    }
    return t;
  }
  function _defineProperty(e, r, t) {
    return r in e ? Object.defineProperty(e, r, { value: t, enumerable: !0, configurable: !0, writable: !0 }) : e[r] = t, e;
  }`;
  return new Function(`${support}\n${source}\nreturn _objectSpread2;`)() as never;
}

const original = helper(OXC_HELPER);
const fast = helper(FAST_HELPER);

/** Every own property with its descriptor, and the prototype: what two copies must agree on. */
function shape(o: object) {
  return { proto: Object.getPrototypeOf(o), props: Object.getOwnPropertyDescriptors(o), keys: Reflect.ownKeys(o) };
}

describe('fastObjectSpread (bundleDist, inlined @trpc/server)', () => {
  it('copies what the compiler helper copies: order, symbols, getters read, null sources, __proto__ as an own key', () => {
    const sym = Symbol('s');
    const hidden = Object.defineProperty({ a: 1 }, 'hidden', { value: 2, enumerable: false });
    const withGetter = {
      get g() {
        return 'read';
      },
    };
    const hostile = JSON.parse('{"__proto__": {"polluted": true}, "x": 1}') as object;
    const cases: unknown[][] = [
      [{}, { a: 1, b: 2 }],
      [{}, { a: 1, [sym]: 'sym' }, {}, { b: 3, a: 4 }],
      [{ first: 0 }, hidden, {}, withGetter],
      [{}, null, {}, undefined],
      [{}, hostile, {}, { y: 2 }],
      [{}, { ctx: { user: 'u' }, input: undefined }, {}, { ctx: { user: 'v', extra: true } }],
    ];
    for (const args of cases) {
      const a = original({}, ...args.slice(1));
      const b = fast({}, ...args.slice(1));
      expect(shape(b)).toEqual(shape(a));
      expect(Object.getPrototypeOf(b)).toBe(Object.prototype);
    }
  });

  it('keeps an accessor an even argument defines, and defines the sources after it key by key', () => {
    const literal = Object.defineProperty({}, 'acc', {
      get: () => 'lazy',
      set: () => undefined,
      enumerable: true,
      configurable: true,
    });
    const a = original({}, { x: 1 }, literal, { acc: 'over', y: 2 });
    const b = fast({}, { x: 1 }, literal, { acc: 'over', y: 2 });
    expect(shape(b)).toEqual(shape(a));
  });

  it("replaces the helper in tRPC's dist module that defines it, and nothing else", () => {
    const module = `const before = 1;\n${OXC_HELPER}\nexport { _objectSpread2 as n };\n`;
    const out = fastObjectSpread(module);
    expect(out.replaced).toBe(true);
    expect(out.text).toBe(`const before = 1;\n${FAST_HELPER}\nexport { _objectSpread2 as n };\n`);
    expect(fastObjectSpread('const x = { ...a };')).toEqual({ text: 'const x = { ...a };', replaced: false });
  });
});
