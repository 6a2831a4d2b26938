import { describe, expect, it } from 'vitest';
import { matchRedirectUri, redirectUriProblem } from './redirectUris.js';

describe('redirectUriProblem', () => {
  it.each([
    'https://app.example.com/cb',
    'http://127.0.0.1/callback',
    'http://127.0.0.1:33418/',
    'http://localhost:8080/cb',
    'http://[::1]:9/cb',
  ])('accepts %s', (uri) => expect(redirectUriProblem(uri, [])).toBeNull());
  it.each([
    ['http://example.com/cb', /loopback/],
    ['https://app.example.com/cb#frag', /fragment/],
    ['https://user:pw@app.example.com/cb', /credentials/],
    ['javascript:alert(1)', /not allowed/],
    ['cursor://anysphere.cursor-mcp/oauth', /not allowed/],
    ['/relative', /absolute/],
    ['http://127.0.0.1.evil.com/cb', /loopback/],
  ])('refuses %s', (uri, why) => expect(redirectUriProblem(uri, [])).toMatch(why));
  it('accepts a private-use scheme the operator allowed', () => {
    expect(redirectUriProblem('cursor://anysphere.cursor-mcp/oauth/callback', ['cursor'])).toBeNull();
  });
});

describe('matchRedirectUri', () => {
  it('matches exactly', () => {
    expect(matchRedirectUri(['https://app.example.com/cb'], 'https://app.example.com/cb')).toBe(true);
    expect(matchRedirectUri(['https://app.example.com/cb'], 'https://app.example.com/cb/')).toBe(false);
    expect(matchRedirectUri(['https://app.example.com/cb'], 'https://app.example.com/cb?x=1')).toBe(false);
    expect(matchRedirectUri(['https://app.example.com:443/cb'], 'https://app.example.com:8443/cb')).toBe(false);
  });
  it('ignores the port on loopback only (RFC 8252 §7.3)', () => {
    expect(matchRedirectUri(['http://127.0.0.1/callback'], 'http://127.0.0.1:53122/callback')).toBe(true);
    expect(matchRedirectUri(['http://127.0.0.1:33418/'], 'http://127.0.0.1:40000/')).toBe(true);
    expect(matchRedirectUri(['http://127.0.0.1/callback'], 'http://127.0.0.1:5/other')).toBe(false);
    expect(matchRedirectUri(['http://127.0.0.1/callback'], 'http://localhost:5/callback')).toBe(false);
  });
  it('compares the loopback URI as written, not as a URL parser normalises it', () => {
    const reg = ['http://127.0.0.1:8977/callback'];
    for (const other of [
      'http://evil@127.0.0.1:8977/callback',
      'http://0x7f000001:8977/callback',
      'http://127.1:8977/callback',
      'http://127.0.0.1:8977\\callback',
      'http://127.0.0.1:8977/callback?',
      'http://127.0.0.1:8977/callback#x',
      'HTTP://127.0.0.1:8977/callback',
      'http://127.0.0.1:8977/Callback',
    ])
      expect(matchRedirectUri(reg, other), other).toBe(false);
    expect(matchRedirectUri(reg, 'http://127.0.0.1:1234/callback')).toBe(true);
    expect(matchRedirectUri(['http://[::1]/cb?x=1'], 'http://[::1]:9/cb?x=1')).toBe(true);
  });
});
