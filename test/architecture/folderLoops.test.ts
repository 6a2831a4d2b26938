import { describe, expect, it } from 'vitest';
import { folderLoops } from './folderLoops.js';

describe('folderLoops', () => {
  it('finds a loop between two folders that no two files make', () => {
    const imports = [
      ['src/openai/toResponses.ts', 'src/anthropic/toMessages.ts'],
      ['src/anthropic/format.ts', 'src/openai/format.ts'],
      ['src/openai/toResponses.ts', 'src/openai/format.ts'],
    ] as const;
    expect(folderLoops(imports)).toEqual(['src: anthropic ⇄ openai']);
  });

  it('names the folder where the loop is, and takes files as rooms beside folders', () => {
    const imports = [
      ['pkg/src/a/x.ts', 'pkg/src/b/y.ts'],
      ['pkg/src/b/z.ts', 'pkg/src/c.ts'],
      ['pkg/src/c.ts', 'pkg/src/a/w.ts'],
      // Within one folder: the rooms are its files.
      ['pkg/src/d/one.ts', 'pkg/src/d/two.ts'],
    ] as const;
    expect(folderLoops(imports)).toEqual(['pkg/src: a ⇄ b ⇄ c.ts']);
  });

  it('arrows all one way are no loop, however many', () => {
    const imports = [
      ['p/services/billing/a.ts', 'p/services/apiKeys/b.ts'],
      ['p/services/apiKeys/b.ts', 'p/services/spend/c.ts'],
      ['p/services/billing/d.ts', 'p/services/spend/c.ts'],
      ['p/routers/r.ts', 'p/services/billing/a.ts'],
    ] as const;
    expect(folderLoops(imports)).toEqual([]);
  });
});
