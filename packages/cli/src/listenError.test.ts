import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { listenErrorMessage } from './listenError.js';

/** The error Node's own listen fails with on `host:port`. */
const listenError = (port: number, host: string) =>
  new Promise<Error>((resolve, reject) => {
    const s = createServer();
    s.once('error', resolve);
    s.listen(port, host, () => s.close(() => reject(new Error(`listened on ${host}:${port}`))));
  });

describe('listenErrorMessage', () => {
  it('a port in use: names the address and the flag that fixes it', async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const { port } = taken.address() as { port: number };
    try {
      const message = listenErrorMessage(await listenError(port, '127.0.0.1'));
      expect(message).toBe(
        `127.0.0.1:${port} is already in use (another ai-backend server, or another program): stop it, or choose another port with --port N (or port in the config; --port 0 picks a free one)`,
      );
    } finally {
      taken.close();
    }
  });

  it('an address not on this machine: says so and names --host', async () => {
    // TEST-NET-1 (RFC 5737): never an address of a real interface.
    expect(listenErrorMessage(await listenError(0, '192.0.2.1'))).toMatch(
      /^cannot listen on 192\.0\.2\.1: 192\.0\.2\.1 is not an address of this machine; choose another with --host/,
    );
  });

  it('a host name that does not resolve, or an IPv6 address in brackets as URLs write it', async () => {
    expect(listenErrorMessage(await listenError(0, '[::1]'))).toBe(
      'cannot listen on [::1]: no address found for that name; --host takes an address of this machine without brackets (--host ::1)',
    );
    const err = Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.invalid'), { code: 'ENOTFOUND', hostname: 'nowhere.invalid' });
    expect(listenErrorMessage(err)).toBe(
      'cannot listen on nowhere.invalid: no address found for that name; --host takes an address of this machine (127.0.0.1, ::1, 0.0.0.0) or a name that resolves to one',
    );
  });

  it('a privileged port: built from the errno Node gives', () => {
    const err = Object.assign(new Error('listen EACCES: permission denied 127.0.0.1:80'), {
      code: 'EACCES',
      address: '127.0.0.1',
      port: 80,
    });
    expect(listenErrorMessage(err)).toMatch(/^not allowed to listen on 127\.0\.0\.1:80: ports below 1024 need privileges/);
  });

  it('any other error: undefined, so it is printed as it is', () => {
    expect(listenErrorMessage(new Error('boom'))).toBeUndefined();
    expect(listenErrorMessage(Object.assign(new Error('x'), { code: 'EADDRINUSE' }))).toBeUndefined();
    expect(listenErrorMessage('EADDRINUSE')).toBeUndefined();
  });
});
