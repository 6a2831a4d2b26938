import { describe, expect, it } from 'vitest';
import { forwardedClientIp, requestClientIp } from './forwardedClientIp.js';

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

describe('requestClientIp', () => {
  const env = { incoming: { socket: { remoteAddress: '10.0.0.9' } } };
  it('the socket address unless trustProxy; then the last forwarded entry', () => {
    expect(requestClientIp('1.1.1.1, 2.2.2.2', env, false)).toBe('10.0.0.9');
    expect(requestClientIp('1.1.1.1, 2.2.2.2', env, true)).toBe('2.2.2.2');
    expect(requestClientIp(undefined, env, true)).toBe('10.0.0.9');
  });
  it('the adapter nested under env.server, and unknown without any socket', () => {
    expect(requestClientIp(null, { server: env }, false)).toBe('10.0.0.9');
    expect(requestClientIp(null, undefined, false)).toBe('unknown');
  });
});
