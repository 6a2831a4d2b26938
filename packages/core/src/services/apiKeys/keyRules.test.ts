import { describe, expect, it } from 'vitest';
import { assertKeyAllowsModel, ipAllowed, keyAllowsModel, keyAllowsResource, modelsForKey } from './keyRules.js';

const grant = (over: object = {}) => ({ id: 'k', ...over });

describe('key rules', () => {
  it('a resource no procedure serves: named by its URI or URI template, an equal entry or a path glob', () => {
    const g = grant({ tools: ['ai.*', 'https://docs.example.com/guides/*', 'https://docs.example.com/items/{id}'] });
    expect(keyAllowsResource(g, ['https://docs.example.com/guides/setup.md'])).toBe(true);
    // `*` stays within one segment; a procedure glob names no URI.
    expect(keyAllowsResource(g, ['https://docs.example.com/guides/a/b.md'])).toBe(false);
    expect(keyAllowsResource(g, ['https://docs.example.com/handbook.md'])).toBe(false);
    expect(keyAllowsResource(grant({ tools: ['*'] }), ['https://docs.example.com/handbook.md'])).toBe(false);
    expect(keyAllowsResource(grant({ tools: ['https://docs.example.com/**'] }), ['https://docs.example.com/a/b.md'])).toBe(true);
    // A template is named by its text (a URI it serves by either).
    expect(keyAllowsResource(g, [undefined, 'https://docs.example.com/items/{id}'])).toBe(true);
    expect(keyAllowsResource(g, ['https://docs.example.com/items/7', 'https://docs.example.com/items/{id}'])).toBe(true);
    // No tools rule, no key: every resource.
    expect(keyAllowsResource(grant(), ['https://docs.example.com/handbook.md'])).toBe(true);
    expect(keyAllowsResource(undefined, ['https://docs.example.com/handbook.md'])).toBe(true);
  });

  it('model globs match the model or provider/model, case-insensitively; providers narrow too', () => {
    const g = grant({ models: ['gpt-4o*', 'anthropic/claude-*'] });
    expect(keyAllowsModel(g, 'openai', 'gpt-4o-mini')).toBe(true);
    expect(keyAllowsModel(g, 'openrouter', 'GPT-4o')).toBe(true);
    expect(keyAllowsModel(g, 'anthropic', 'claude-sonnet-4-5')).toBe(true);
    expect(keyAllowsModel(g, 'openai', 'claude-sonnet-4-5')).toBe(false);
    expect(keyAllowsModel(g, 'openai', 'gpt-5')).toBe(false);
    expect(keyAllowsModel(grant({ providers: ['openai'] }), 'google', 'gemini-2.5-flash')).toBe(false);
    expect(keyAllowsModel(undefined, 'google', 'x')).toBe(true);
    expect(() => assertKeyAllowsModel(g, 'openai', 'gpt-5')).toThrow(
      expect.objectContaining({ appCode: 'FORBIDDEN', details: expect.objectContaining({ reason: 'key_model_not_allowed' }) }),
    );
  });

  it('client addresses: IPs and CIDRs, v4 and v6, mapped v4; unknown never matches', () => {
    const ranges = ['203.0.113.0/24', '2001:db8::/32', '198.51.100.7'];
    expect(ipAllowed(ranges, '203.0.113.9')).toBe(true);
    expect(ipAllowed(ranges, '::ffff:203.0.113.9')).toBe(true);
    expect(ipAllowed(ranges, '2001:db8:1::5')).toBe(true);
    expect(ipAllowed(ranges, '198.51.100.7')).toBe(true);
    expect(ipAllowed(ranges, '198.51.100.8')).toBe(false);
    expect(ipAllowed(ranges, 'unknown')).toBe(false);
    expect(ipAllowed(ranges, undefined)).toBe(false);
  });

  it('narrows model listings to the key, both shapes', () => {
    const g = grant({ models: ['gpt-4o*'], providers: ['openai', 'openrouter'] });
    expect(modelsForKey(g, { models: { openai: ['gpt-4o', 'gpt-5'], anthropic: ['claude'] } })).toEqual({
      models: { openai: ['gpt-4o'], anthropic: [] },
    });
    expect(modelsForKey(g, { provider: 'openrouter', models: ['gpt-4o-mini', 'x'] })).toEqual({
      provider: 'openrouter',
      models: ['gpt-4o-mini'],
    });
    const listed = { models: { openai: ['a'] } };
    expect(modelsForKey(undefined, listed)).toBe(listed);
  });
});
