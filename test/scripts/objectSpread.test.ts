import { describe, expect, it } from 'vitest';

// A plain .mjs build script (no types): imported by URL.
const { fastObjectSpread, writesAccessors, FAST_HELPER, SPREAD_HELPER, OXC_HELPER } = (await import(
  new URL('../../scripts/objectSpread.mjs', import.meta.url).href
)) as {
  fastObjectSpread: (text: string, packageSources?: () => string[]) => { text: string; replaced: boolean; spreadOnly: boolean };
  writesAccessors: (text: string) => boolean;
  FAST_HELPER: string;
  SPREAD_HELPER: string;
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
const spread = helper(SPREAD_HELPER);

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
      for (const copy of [fast, spread]) {
        const b = copy({}, ...args.slice(1));
        expect(shape(b)).toEqual(shape(a));
        expect(Object.getPrototypeOf(b)).toBe(Object.prototype);
      }
    }
  });

  it('spreads literals without accessors as the compiler helper defines them: methods, symbols, computed __proto__, overrides in place', () => {
    const sym = Symbol('s');
    const method = {
      next() {
        return 1;
      },
    };
    const cases: unknown[][] = [
      // `{ ...opts, ctx, input, next() {} }`, as tRPC's callRecursive writes it
      [{ ctx: 1, input: 2, path: 'p', type: 'query' }, {}, { ctx: 3, input: undefined, next: method.next }],
      [{ a: 1 }, {}, { [sym]: 'sym', ['__proto__']: { polluted: true }, b: 2 }],
      [{ a: 1, b: 2 }, { c: 3 }, { b: 4, d: 5 }, { a: 6 }, { e: 7 }],
      [{ a: 1 }, null, { b: 2 }],
      [{ a: 1 }, undefined, undefined],
      [{ a: 1 }],
    ];
    for (const [first, ...rest] of cases) {
      const a = original({ ...(first as object) }, ...rest);
      const b = spread({ ...(first as object) }, ...rest);
      expect(shape(b)).toEqual(shape(a));
      expect(Object.getPrototypeOf(b)).toBe(Object.prototype);
      expect(Object.hasOwn(b, '__proto__')).toBe(Object.hasOwn(a, '__proto__'));
    }
  });

  it('finds accessor syntax in a module, erring towards yes', () => {
    for (const text of [
      'get foo() {',
      '\tset foo(v) {',
      'get [k]() {',
      "get 'a b'() {",
      'get 0() {}',
      'static get x() {}',
      'get\n  foo() {',
    ])
      expect(writesAccessors(text), text).toBe(true);
    for (const text of ['headers.get("x")', 'map.get(key)', 'getFoo()', 'const set = new Set()', 'async get() {', 'target(', 'offset (x)'])
      expect(writesAccessors(text), text).toBe(false);
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
    expect(out.spreadOnly).toBe(true);
    expect(out.text).toBe(`const before = 1;\n${SPREAD_HELPER}\nexport { _objectSpread2 as n };\n`);
    expect(fastObjectSpread('const x = { ...a };')).toEqual({ text: 'const x = { ...a };', replaced: false, spreadOnly: false });
  });

  it('keeps the exact helper when any module of the package writes an accessor', () => {
    const module = `${OXC_HELPER}\nexport { _objectSpread2 as n };\n`;
    const other =
      'import { n as _objectSpread2 } from "./a.mjs";\nconst o = _objectSpread2(_objectSpread2({}, x), {}, { get lazy() { return 1; } });';
    const out = fastObjectSpread(module, () => [module, other]);
    expect(out.spreadOnly).toBe(false);
    expect(out.text).toBe(`${FAST_HELPER}\nexport { _objectSpread2 as n };\n`);
    expect(fastObjectSpread(module, () => [module, 'const o = _objectSpread2({}, x);']).spreadOnly).toBe(true);
  });
});
