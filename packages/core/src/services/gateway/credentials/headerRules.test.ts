import { describe, expect, it } from 'vitest';
import { checkUserHeaders } from './headerRules.js';

describe('checkUserHeaders', () => {
  it('lower-cases names and keeps values', () => {
    expect(checkUserHeaders({ 'X-Api-Key': 'k-1', Authorization: 'Bearer abc' })).toEqual({
      'x-api-key': 'k-1',
      authorization: 'Bearer abc',
    });
  });

  it.each([
    [{}, /at least one/],
    [{ Host: 'evil' }, /set by the gateway/],
    [{ 'mcp-session-id': 's' }, /set by the gateway/],
    [{ 'bad name': 'v' }, /not an HTTP header name/],
    [{ a: 'v', A: 'w' }, /given twice/],
    [{ a: '' }, /1 to 8192/],
    [{ a: 'x'.repeat(8193) }, /1 to 8192/],
  ])('refuses %j', (headers, message) => {
    expect(() => checkUserHeaders(headers as Record<string, string>)).toThrow(message);
  });

  it('refuses line breaks and non-ASCII without quoting the value', () => {
    for (const value of ['SECRETVALUE\r\nx-evil: 1', 'SECRETVALUE\n', 'SECRETVALUÉ', ' SECRETVALUE']) {
      let message = '';
      try {
        checkUserHeaders({ 'x-api-key': value });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(/cannot have/);
      expect(message).not.toContain('SECRETVALU');
    }
  });

  it('refuses more than 16 headers', () => {
    const many = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`x-h${i}`, 'v']));
    expect(() => checkUserHeaders(many)).toThrow(/at most 16/);
  });
});
