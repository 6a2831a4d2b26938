import { describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import { bearerToken, clientIp, requestOrigin, requestTokenInQuery, tokenInQuery } from './requestFacts.js';

/** The client address as a route sees it, with `env` as the Node adapter passes it. */
async function ipOf(trustProxy: boolean, headers: Record<string, string>, env?: unknown): Promise<string> {
  const a = new Hono();
  a.get('/', (c) => c.text(clientIp(c, trustProxy)));
  return (await a.request('/', { headers }, env as never)).text();
}
const socket = (remoteAddress: string) => ({ incoming: { socket: { remoteAddress } } });

describe('clientIp', () => {
  it('is the socket address on the Node adapter, whatever X-Forwarded-For says, without trustProxy', async () => {
    expect(await ipOf(false, { 'x-forwarded-for': '1.2.3.4' }, socket('10.0.0.7'))).toBe('10.0.0.7');
    // The adapter's env shape when wrapped (env.server.incoming).
    expect(await ipOf(false, {}, { server: socket('10.0.0.8') })).toBe('10.0.0.8');
  });

  it("is 'unknown' in process (no socket), never a header value", async () => {
    expect(await ipOf(false, { 'x-forwarded-for': '1.2.3.4' })).toBe('unknown');
  });

  it('with trustProxy, is the last X-Forwarded-For entry (the one our proxy appended), not the first a client can pick', async () => {
    expect(await ipOf(true, { 'x-forwarded-for': '6.6.6.6, 203.0.113.9' }, socket('10.0.0.7'))).toBe('203.0.113.9');
    expect(await ipOf(true, { 'x-forwarded-for': '203.0.113.9, ' }, socket('10.0.0.7'))).toBe('203.0.113.9');
    expect(await ipOf(true, {}, socket('10.0.0.7'))).toBe('10.0.0.7');
  });
});

describe('requestOrigin', () => {
  const r = (headers: Record<string, string>) => new Request('http://127.0.0.1/', { headers });
  it('is the Origin header; X-Forwarded-Origin only behind a trusted proxy', () => {
    expect(requestOrigin(r({ origin: 'https://a.example' }), false)).toBe('https://a.example');
    expect(requestOrigin(r({ origin: 'https://a.example', 'x-forwarded-origin': 'https://b.example' }), false)).toBe('https://a.example');
    expect(requestOrigin(r({ origin: 'https://a.example', 'x-forwarded-origin': 'https://b.example' }), true)).toBe('https://b.example');
    expect(requestOrigin(r({}), true)).toBeUndefined();
  });
});

describe('bearerToken', () => {
  const r = (headers: Record<string, string>) => new Request('http://127.0.0.1/', { headers });
  it('reads a Bearer token, case-insensitively, trimmed', () => {
    expect(bearerToken(r({ authorization: 'Bearer abc.def' }))).toBe('abc.def');
    expect(bearerToken(r({ authorization: 'bearer   abc ' }))).toBe('abc');
  });

  it('falls back to x-api-key (the Anthropic wire format) only without Authorization', () => {
    expect(bearerToken(r({ 'x-api-key': 'aib_key' }))).toBe('aib_key');
    expect(bearerToken(r({ authorization: 'Bearer jwt', 'x-api-key': 'aib_key' }))).toBe('jwt');
  });

  it('is null without any credential', () => {
    expect(bearerToken(r({}))).toBeNull();
  });

  it('counts a malformed or empty credential as presented and invalid (never as absent)', () => {
    for (const authorization of ['Basic dXNlcjpwYXNz', 'Bearer', 'Bearer    ', 'Token abc'])
      expect(bearerToken(r({ authorization })), authorization).toBe('\u0000');
    expect(bearerToken(r({ 'x-api-key': '  ' }))).toBe('\u0000');
  });
});

describe('tokenInQuery', () => {
  it('finds access_token, token and id_token (RFC 6750 §2.3 is refused), not other parameters', () => {
    for (const q of ['access_token=a', 'token=a', 'id_token=a', 'x=1&access_token='])
      expect(tokenInQuery(new URL(`http://h/p?${q}`)), q).toBe(true);
    for (const q of ['', 'tokens=a', 'input=%7B%22token%22%3A1%7D']) expect(tokenInQuery(new URL(`http://h/p?${q}`)), q).toBe(false);
  });

  it('finds them in a request URL also when the name is percent-encoded', () => {
    for (const q of ['access_token=a', 'access_tok%65n=a', '%74oken=a', 'x=1&id%5Ftoken=a'])
      expect(requestTokenInQuery(`http://h/mcp?${q}`), q).toBe(true);
    for (const u of ['http://h/mcp', 'http://h/token=a', 'http://h/trpc/x?input=%7B%22token%22%3A1%7D'])
      expect(requestTokenInQuery(u), u).toBe(false);
  });
});
