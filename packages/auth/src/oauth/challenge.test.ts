import { describe, expect, it } from 'vitest';
import { bearerChallenge, mcpResourceUrl, resourceMetadataUrl, sameResource } from './challenge.js';

describe('bearerChallenge', () => {
  it('names the resource metadata first, then error, description and scope', () => {
    expect(
      bearerChallenge({
        resourceMetadata: 'https://h/.well-known/oauth-protected-resource/mcp',
        error: 'insufficient_scope',
        errorDescription: 'needs mcp:call',
        scope: 'mcp mcp:call',
      }),
    ).toBe(
      'Bearer resource_metadata="https://h/.well-known/oauth-protected-resource/mcp", error="insufficient_scope", error_description="needs mcp:call", scope="mcp mcp:call"',
    );
  });
  it('keeps quotes, backslashes and control characters out of quoted values', () => {
    const h = bearerChallenge({
      resourceMetadata: 'https://h/x',
      error: 'invalid_token',
      errorDescription: 'bad "token"\\\r\nSet-Cookie: x=1',
    });
    expect(h).toBe('Bearer resource_metadata="https://h/x", error="invalid_token", error_description="bad tokenSet-Cookie: x=1"');
  });
});

describe('resource URLs', () => {
  it('puts the well-known segment between host and path (RFC 9728 §3.1)', () => {
    expect(resourceMetadataUrl('https://api.example.com')).toBe('https://api.example.com/.well-known/oauth-protected-resource/mcp');
    expect(resourceMetadataUrl('https://example.com/ai')).toBe('https://example.com/.well-known/oauth-protected-resource/ai/mcp');
    expect(mcpResourceUrl('https://example.com/ai/')).toBe('https://example.com/ai/mcp');
  });
});

describe('sameResource (RFC 8707, MCP canonical server URI)', () => {
  it('accepts uppercase scheme and host and a trailing slash, never another path, host or a fragment', () => {
    const r = 'https://api.example.com/mcp';
    expect(sameResource('https://api.example.com/mcp', r)).toBe(true);
    expect(sameResource('HTTPS://API.Example.COM/mcp', r)).toBe(true);
    expect(sameResource('https://api.example.com/mcp/', r)).toBe(true);
    expect(sameResource('https://api.example.com:443/mcp', r)).toBe(true);
    expect(sameResource('https://api.example.com/MCP', r)).toBe(false);
    expect(sameResource('https://api.example.com/mcp#x', r)).toBe(false);
    expect(sameResource('https://other.example.com/mcp', r)).toBe(false);
    expect(sameResource('api.example.com/mcp', r)).toBe(false);
  });
});
