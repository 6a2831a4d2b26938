import { describe, expect, it } from 'vitest';
import { CoreError } from '../../kernel/CoreError.js';
import { SystemPromptStore } from './SystemPromptStore.js';

describe('SystemPromptStore', () => {
  const store = new SystemPromptStore({ support: 'SECRET SUPPORT TEXT', 'code.review-v2': 'REVIEW' });
  const namedOnly = new SystemPromptStore({ support: 'SECRET SUPPORT TEXT', 'code.review-v2': 'REVIEW' }, 'refused');

  it('resolves exact "@name" references and passes other text through', () => {
    expect(store.resolve('@support')).toEqual({ text: 'SECRET SUPPORT TEXT', name: 'support', allowWithCallerKeys: false });
    expect(namedOnly.resolve('@code.review-v2')).toEqual({ text: 'REVIEW', name: 'code.review-v2', allowWithCallerKeys: false });
    // Not a bare reference: inline text, even when it starts with "@".
    expect(store.resolve('@support please')).toEqual({ text: '@support please' });
    expect(store.resolve('')).toEqual({ text: '' });
  });

  it('refuses unknown references and, when disabled, inline text', () => {
    const unknown = (() => {
      try {
        store.resolve('@missing');
      } catch (e) {
        return e;
      }
    })();
    expect(unknown).toBeInstanceOf(CoreError);
    expect((unknown as CoreError).appCode).toBe('NOT_FOUND');
    expect(() => namedOnly.resolve('inline')).toThrow(/only accepts named system prompts/);
  });

  it('lists names only and validates what code registers', () => {
    const s = new SystemPromptStore();
    s.register('a', 'TEXT-A');
    expect(s.names()).toEqual(['a']);
    expect(JSON.stringify(s.names())).not.toContain('TEXT-A');
    expect(() => s.register('bad name', 'x')).toThrow(TypeError);
    expect(() => s.register('empty', '')).toThrow(TypeError);
    expect(s.unregister('a')).toBe(true);
    expect(s.has('a')).toBe(false);
  });
});
