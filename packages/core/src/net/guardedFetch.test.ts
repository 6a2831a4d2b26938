import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardedFetch, guardedUrlProblem, isPublicAddress } from './guardedFetch.js';

let server: Server;
let port = 0;
const opts = { timeoutMs: 2000, maxBytes: 1024, allowHttp: true };

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/big') return res.end('x'.repeat(5000));
    if (req.url === '/big-chunked') {
      res.write('x'.repeat(800));
      return setTimeout(() => res.end('y'.repeat(800)), 10);
    }
    if (req.url === '/slow') return setTimeout(() => res.end('late'), 1500);
    if (req.url === '/redirect') return res.writeHead(302, { location: '/doc' }).end();
    if (req.url === '/redirect-meta') return res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data' }).end();
    res.setHeader('content-type', 'application/json');
    res.end('{"ok":true}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('isPublicAddress', () => {
  it.each([
    ['8.8.8.8', true],
    ['2606:4700:4700::1111', true],
    ['127.0.0.1', false],
    ['10.1.2.3', false],
    ['172.16.0.1', false],
    ['192.168.1.1', false],
    ['169.254.169.254', false],
    ['100.64.0.1', false],
    ['0.0.0.0', false],
    ['::1', false],
    ['fe80::1', false],
    ['fd00::1', false],
    ['::ffff:10.0.0.1', false],
    ['::ffff:8.8.8.8', true],
    ['224.0.0.1', false],
    ['not an ip', false],
  ])('%s → %s', (ip, expected) => expect(isPublicAddress(ip)).toBe(expected));
});

describe('guardedFetch', () => {
  it('refuses loopback by address literal and by name (DNS answer checked at connect)', async () => {
    await expect(guardedFetch(`http://127.0.0.1:${port}/doc`, opts)).rejects.toMatchObject({
      appCode: 'FORBIDDEN',
      details: { reason: 'ssrf_blocked' },
    });
    await expect(guardedFetch(`http://[::1]:${port}/doc`, opts)).rejects.toMatchObject({ appCode: 'FORBIDDEN' });
    await expect(guardedFetch(`http://localhost:${port}/doc`, opts)).rejects.toMatchObject({
      appCode: 'FORBIDDEN',
      details: { reason: 'ssrf_blocked' },
    });
  });

  it('refuses http unless allowed, and URLs with credentials', async () => {
    expect(guardedUrlProblem(new URL('http://example.com/x'), {})).toMatch(/only https/);
    expect(guardedUrlProblem(new URL('https://u:p@example.com/x'), {})).toMatch(/credentials/);
    expect(guardedUrlProblem(new URL('https://example.com/x'), {})).toBeNull();
    await expect(
      guardedFetch(`http://127.0.0.1:${port}/doc`, { ...opts, allowHttp: false, allowPrivateNetwork: true }),
    ).rejects.toMatchObject({ appCode: 'FORBIDDEN' });
  });

  it('fetches with allowPrivateNetwork (development and tests)', async () => {
    const res = await guardedFetch(`http://127.0.0.1:${port}/doc`, { ...opts, allowPrivateNetwork: true });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body.toString())).toEqual({ ok: true });
  });

  it('bounds the size, declared or streamed', async () => {
    const o = { ...opts, allowPrivateNetwork: true };
    await expect(guardedFetch(`http://127.0.0.1:${port}/big`, o)).rejects.toMatchObject({ appCode: 'PAYLOAD_TOO_LARGE' });
    await expect(guardedFetch(`http://127.0.0.1:${port}/big-chunked`, o)).rejects.toMatchObject({ appCode: 'PAYLOAD_TOO_LARGE' });
  });

  it('bounds the time', async () => {
    await expect(
      guardedFetch(`http://127.0.0.1:${port}/slow`, { ...opts, allowPrivateNetwork: true, timeoutMs: 200 }),
    ).rejects.toMatchObject({ appCode: 'UPSTREAM_TIMEOUT' });
  });

  it('does not follow redirects by default; followed ones are checked again', async () => {
    const o = { ...opts, allowPrivateNetwork: true };
    await expect(guardedFetch(`http://127.0.0.1:${port}/redirect`, o)).rejects.toMatchObject({ appCode: 'UPSTREAM_ERROR' });
    const followed = await guardedFetch(`http://127.0.0.1:${port}/redirect`, { ...o, maxRedirects: 2 });
    expect(followed.url).toBe(`http://127.0.0.1:${port}/doc`);
    // The guard applies per hop: a public-only fetch never reaches the metadata address a redirect names.
    expect(guardedUrlProblem(new URL('http://169.254.169.254/latest/meta-data'), { allowHttp: true })).toMatch(/non-public/);
  });
});
