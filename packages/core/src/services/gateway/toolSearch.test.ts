import { describe, expect, it } from 'vitest';
import { searchTools } from './toolSearch.js';

const t = (name: string, description: string) => ({ name, description, inputSchema: { type: 'object' } });
const TOOLS = [
  t('fs__read_text_file', 'Read the complete contents of a file as text'),
  t('fs__list_directory', 'List the files in a directory'),
  t('web__echo', 'Echoes back the input'),
  t('web__get-sum', 'Returns the sum of two numbers'),
  t('gh__createIssue', 'Create an issue in a repository'),
];

describe('searchTools', () => {
  it('ranks name words over name substrings over description words', () => {
    expect(searchTools(TOOLS, 'read file', 3).map((x) => x.name)[0]).toBe('fs__read_text_file');
    expect(searchTools(TOOLS, 'sum numbers', 5).map((x) => x.name)).toEqual(['web__get-sum']);
    expect(searchTools(TOOLS, 'issue', 5).map((x) => x.name)).toEqual(['gh__createIssue']);
  });
  it('finds nothing for unrelated words, and honours the limit', () => {
    expect(searchTools(TOOLS, 'weather forecast', 5)).toEqual([]);
    expect(searchTools(TOOLS, 'file directory', 1)).toHaveLength(1);
  });
  it('a query as large as a request body costs no more than its distinct words (at most 32): no caller can hold the event loop', async () => {
    // Hundreds of upstream tools with long descriptions, and a query of 300,000 words (about 900 KB, within bodyLimit).
    const many = Array.from({ length: 300 }, (_, i) =>
      t(`s${i % 7}__tool_${i}`, `${'several words of a long description '.repeat(20)}#${i}`),
    );
    const huge = 'ab '.repeat(300_000);
    const started = performance.now();
    expect(searchTools(many, huge, 10)).toEqual(searchTools(many, 'ab', 10));
    const varied = Array.from({ length: 100_000 }, (_, i) => `w${i.toString(36)}`).join(' ');
    expect(searchTools(many, `tool ${varied}`, 3)).toEqual(searchTools(many, 'tool', 3));
    expect(performance.now() - started).toBeLessThan(1500);
  });
});
