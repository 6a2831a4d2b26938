import { describe, expect, it } from 'vitest';
import { namedInMessage } from './namedInMessage.js';

describe('namedInMessage: the field a core message starts with, as the request wrote it', () => {
  it('replaces a leading last segment or dotted path, and nothing else', () => {
    expect(namedInMessage('maxTokens may be at most 32768', 'options.maxTokens', 'max_completion_tokens')).toBe(
      'max_completion_tokens may be at most 32768',
    );
    expect(namedInMessage('toolChoice "required" needs at least one tool', 'toolChoice', 'tool_choice')).toBe(
      'tool_choice "required" needs at least one tool',
    );
    expect(namedInMessage('tools.0.parameters is not a valid JSON Schema: x', 'tools.0.parameters', 'tools[0].function.parameters')).toBe(
      'tools[0].function.parameters is not a valid JSON Schema: x',
    );
    // Not the field's name at the start (a word that only begins with it, or another text): as it is.
    expect(namedInMessage('maxTokensLimit is 5', 'options.maxTokens', 'max_tokens')).toBe('maxTokensLimit is 5');
    expect(namedInMessage('tool name "f" is declared twice', 'tools.1.name', 'tools[1].function.name')).toBe(
      'tool name "f" is declared twice',
    );
  });
});
