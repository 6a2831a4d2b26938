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
});
