import { describe, expect, it } from 'vitest';
import superjson from 'superjson';
import { MAX_META_ENTRIES, superjsonMetaProblem } from './superjsonMeta.js';

describe('superjsonMetaProblem', () => {
  it('accepts what superjson itself produces (Date, Map, Set, bigint, undefined, referential equalities)', () => {
    const shared = { n: 1 };
    const one = superjson.serialize({
      at: new Date(0),
      m: new Map([['k', 1]]),
      s: new Set([1]),
      b: 10n,
      u: undefined,
      x: shared,
      y: shared,
    });
    expect(one.meta).toBeDefined();
    expect(superjsonMetaProblem(one, false)).toBeNull();
    // A batch: { "0": call, "1": call }.
    expect(superjsonMetaProblem({ 0: one, 1: superjson.serialize({ at: new Date(1) }) }, true)).toBeNull();
  });

  it('ignores inputs without meta and non-objects', () => {
    expect(superjsonMetaProblem({ json: { a: 1 } }, false)).toBeNull();
    // A call whose data has a `meta` field of its own is not a batch member's meta.
    expect(superjsonMetaProblem({ json: { meta: 'mine' } }, false)).toBeNull();
    expect(superjsonMetaProblem(null, false)).toBeNull();
    expect(superjsonMetaProblem([1, 2], true)).toBeNull();
  });

  it.each([
    ['an unknown key', { values: {}, extra: 1 }],
    ['a non-number version', { v: '1' }],
    ['an annotation superjson would need a registration for', { values: { a: ['class'] } }],
    ['a node that is not a list', { values: { a: 'Date' } }],
    ['a node with three members', { values: { a: ['Date', {}, 1] } }],
    ['a typed-array annotation without its type', { values: { a: [['typed-array']] } }],
    ['a typed-array annotation', { values: { a: [['typed-array', 'Uint8Array']] } }],
    ['referential equalities that are not paths', { referentialEqualities: { a: [1] } }],
    ['a path deeper than 64 segments', { values: { [Array(66).fill('a').join('.')]: ['Date'] } }],
  ])('refuses %s as malformed', (_name, meta) => {
    expect(superjsonMetaProblem({ json: {}, meta }, false)).toBe('malformed input meta');
  });

  it(`counts annotations and equality paths together against ${MAX_META_ENTRIES}`, () => {
    const values: Record<string, [string]> = {};
    for (let i = 0; i < MAX_META_ENTRIES - 1; i++) values[`v${i}`] = ['Date'];
    expect(superjsonMetaProblem({ json: {}, meta: { values } }, false)).toBeNull();
    const over = { values, referentialEqualities: { a: ['b', 'c'] } };
    expect(superjsonMetaProblem({ json: {}, meta: over }, false)).toBe(`input meta has more than ${MAX_META_ENTRIES} entries`);
  });

  it('checks every call of a batch', () => {
    expect(superjsonMetaProblem({ 0: { json: 1 }, 1: { json: {}, meta: { values: { a: ['symbol'] } } } }, true)).toBe(
      'malformed input meta',
    );
    // A batch with a stray top-level `json` is still a batch (tRPC decides by ?batch=1): its calls are checked.
    const over = { values: Object.fromEntries(Array.from({ length: MAX_META_ENTRIES + 1 }, (_, i) => [`v${i}`, ['Date']])) };
    expect(superjsonMetaProblem({ 0: { json: {}, meta: over }, json: null }, true)).toBe(
      `input meta has more than ${MAX_META_ENTRIES} entries`,
    );
  });

  it('refuses typed arrays (a number becomes an array that long) and paths whose indexes add up past a million steps', () => {
    expect(superjsonMetaProblem({ json: { a: 60_000_000 }, meta: { values: { a: [['typed-array', 'Float64Array']] } } }, false)).toBe(
      'malformed input meta',
    );
    // superjson walks a Set or Map to its n-th item for every numeric segment of every path.
    const deep = `s${'.99999'.repeat(11)}`;
    expect(superjsonMetaProblem({ json: {}, meta: { referentialEqualities: { s: [deep] } } }, false)).toMatch(/index more than/);
    expect(superjsonMetaProblem({ json: {}, meta: { values: { [deep]: ['Date'] } } }, false)).toMatch(/index more than/);
    // What real inputs carry stays well inside it.
    expect(
      superjsonMetaProblem({ json: {}, meta: { values: { 'items.5000.at': ['Date'], 'items.9999.at': ['Date'] } } }, false),
    ).toBeNull();
  });
});
