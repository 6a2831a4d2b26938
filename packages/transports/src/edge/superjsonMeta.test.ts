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
    expect(superjsonMetaProblem(one)).toBeNull();
    // A batch: { "0": call, "1": call }.
    expect(superjsonMetaProblem({ 0: one, 1: superjson.serialize({ at: new Date(1) }) })).toBeNull();
  });

  it('ignores inputs without meta and non-objects', () => {
    expect(superjsonMetaProblem({ json: { a: 1 } })).toBeNull();
    expect(superjsonMetaProblem(null)).toBeNull();
    expect(superjsonMetaProblem([1, 2])).toBeNull();
  });

  it.each([
    ['an unknown key', { values: {}, extra: 1 }],
    ['a non-number version', { v: '1' }],
    ['an annotation superjson would need a registration for', { values: { a: ['class'] } }],
    ['a node that is not a list', { values: { a: 'Date' } }],
    ['a node with three members', { values: { a: ['Date', {}, 1] } }],
    ['a typed-array annotation without its type', { values: { a: [['typed-array']] } }],
    ['referential equalities that are not paths', { referentialEqualities: { a: [1] } }],
    ['a path deeper than 64 segments', { values: { [Array(66).fill('a').join('.')]: ['Date'] } }],
  ])('refuses %s as malformed', (_name, meta) => {
    expect(superjsonMetaProblem({ json: {}, meta })).toBe('malformed input meta');
  });

  it(`counts annotations and equality paths together against ${MAX_META_ENTRIES}`, () => {
    const values: Record<string, [string]> = {};
    for (let i = 0; i < MAX_META_ENTRIES - 1; i++) values[`v${i}`] = ['Date'];
    expect(superjsonMetaProblem({ json: {}, meta: { values } })).toBeNull();
    const over = { values, referentialEqualities: { a: ['b', 'c'] } };
    expect(superjsonMetaProblem({ json: {}, meta: over })).toBe(`input meta has more than ${MAX_META_ENTRIES} entries`);
  });

  it('checks every call of a batch', () => {
    expect(superjsonMetaProblem({ 0: { json: 1 }, 1: { json: {}, meta: { values: { a: ['symbol'] } } } })).toBe('malformed input meta');
  });
});
