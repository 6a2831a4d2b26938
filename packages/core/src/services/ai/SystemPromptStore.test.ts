import { describe, expect, it } from 'vitest';
import { CoreError } from '../../kernel/CoreError.js';
import { SystemPromptStore } from './SystemPromptStore.js';

describe('SystemPromptStore', () => {
  const store = new SystemPromptStore({ support: 'SECRET SUPPORT TEXT', 'code.review-v2': 'REVIEW' });

  it('resolves exact "@name" references and passes other text through', () => {
    expect(store.resolve('@support', true)).toEqual({ text: 'SECRET SUPPORT TEXT', name: 'support', allowWithCallerKeys: false });
    expect(store.resolve('@code.review-v2', false)).toEqual({ text: 'REVIEW', name: 'code.review-v2', allowWithCallerKeys: false });
    // Not a bare reference: inline text, even when it starts with "@".
    expect(store.resolve('@support please', true)).toEqual({ text: '@support please' });
    expect(store.resolve('', true)).toEqual({ text: '' });
  });

  it('refuses unknown references and, when disabled, inline text', () => {
    const unknown = (() => {
      try {
        store.resolve('@missing', true);
      } catch (e) {
        return e;
      }
    })();
    expect(unknown).toBeInstanceOf(CoreError);
    expect((unknown as CoreError).appCode).toBe('NOT_FOUND');
    expect(() => store.resolve('inline', false)).toThrow(/only accepts named system prompts/);
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
