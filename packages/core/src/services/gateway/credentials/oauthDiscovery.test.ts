import { describe, expect, it } from 'vitest';
import { canonicalResource, resourceCovers } from './oauthDiscovery.js';
import { bearerChallenge } from './oauthHttp.js';

describe('resourceCovers: tokens for a resource go only to URLs under it', () => {
  it.each([
    ['https://a.example/mcp', 'https://a.example/mcp', true],
    ['https://a.example/mcp/', 'https://a.example/mcp', true],
    ['https://a.example', 'https://a.example/mcp', true],
    ['https://a.example/', 'https://a.example/x/y', true],
    ['https://a.example/mcp', 'https://a.example/mcp/sub', true],
    ['https://a.example/mcp', 'https://a.example/mcpx', false],
    ['https://a.example/mcp', 'https://a.example/other', false],
    ['https://a.example/mcp', 'https://b.example/mcp', false],
    ['https://a.example/mcp', 'http://a.example/mcp', false],
    ['https://a.example:8443/mcp', 'https://a.example/mcp', false],
  ])('%s covers %s: %s', (resource, server, expected) => {
    expect(resourceCovers(resource, server)).toBe(expected);
  });

  it('canonicalResource drops the fragment and a trailing slash', () => {
    expect(canonicalResource('https://a.example/mcp/#x')).toBe('https://a.example/mcp');
  });
});

describe('bearerChallenge', () => {
  it('reads quoted and bare parameters, case-insensitively', () => {
    expect(
      bearerChallenge(
        'Bearer error="invalid_token", error_description="no \\"token\\"", Resource_Metadata="https://a.example/.well-known/oauth-protected-resource/mcp", scope=tools',
      ),
    ).toEqual({
      error: 'invalid_token',
      error_description: 'no "token"',
      resource_metadata: 'https://a.example/.well-known/oauth-protected-resource/mcp',
      scope: 'tools',
    });
  });

  it('finds Bearer after another scheme and answers {} without one', () => {
    expect(bearerChallenge('Basic realm="x", Bearer scope="a b"')).toMatchObject({ scope: 'a b' });
    expect(bearerChallenge(null)).toEqual({});
    expect(bearerChallenge('Basic realm="x"')).toEqual({});
  });
});
