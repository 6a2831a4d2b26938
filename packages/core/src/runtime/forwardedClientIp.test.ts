import { describe, expect, it } from 'vitest';
import { forwardedClientIp } from './forwardedClientIp.js';

describe('forwardedClientIp', () => {
  it('takes the entry our proxy appended (the last), not what the client sent', () => {
    expect(forwardedClientIp('6.6.6.6, 10.0.0.7')).toBe('10.0.0.7');
    expect(forwardedClientIp('203.0.113.9')).toBe('203.0.113.9');
    expect(forwardedClientIp('1.1.1.1, 10.0.0.7 , ')).toBe('10.0.0.7');
  });
  it('gives nothing for an absent or empty header', () => {
    expect(forwardedClientIp(undefined)).toBeUndefined();
    expect(forwardedClientIp(' , ')).toBeUndefined();
  });
});
