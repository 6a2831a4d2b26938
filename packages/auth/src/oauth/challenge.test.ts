import { describe, expect, it } from 'vitest';
import { bearerChallenge, mcpResourceUrl, resourceMetadataUrl } from './challenge.js';

describe('bearerChallenge', () => {
  it('names the resource metadata first, then error, description and scope', () => {
    expect(
      bearerChallenge({ resourceMetadata: 'https://h/.well-known/oauth-protected-resource/mcp', error: 'insufficient_scope', errorDescription: 'needs mcp:call', scope: 'mcp mcp:call' }),
    ).toBe('Bearer resource_metadata="https://h/.well-known/oauth-protected-resource/mcp", error="insufficient_scope", error_description="needs mcp:call", scope="mcp mcp:call"');
  });
  it('keeps quotes, backslashes and control characters out of quoted values', () => {
    const h = bearerChallenge({ resourceMetadata: 'https://h/x', error: 'invalid_token', errorDescription: 'bad "token"\\\r\nSet-Cookie: x=1' });
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
