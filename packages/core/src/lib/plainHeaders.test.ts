import { describe, expect, it } from 'vitest';
import { plainHeaders } from './plainHeaders.js';

describe('plainHeaders', () => {
  it('reads a record, a Headers object and header pairs alike', () => {
    expect(plainHeaders({ 'content-type': 'application/json', authorization: 'Bearer x' })).toEqual({
      'content-type': 'application/json',
      authorization: 'Bearer x',
    });
    expect(plainHeaders(new Headers({ 'X-Trace': '1' }))).toEqual({ 'x-trace': '1' });
    expect(
      plainHeaders([
        ['X-A', 'a'],
        ['x-b', 'b'],
      ]),
    ).toEqual({ 'x-a': 'a', 'x-b': 'b' });
  });

  it('drops headers left undefined (as fetch does) and takes no headers as none', () => {
    expect(plainHeaders({ a: '1', b: undefined } as unknown as HeadersInit)).toEqual({ a: '1' });
    expect(plainHeaders(undefined)).toEqual({});
  });
});
