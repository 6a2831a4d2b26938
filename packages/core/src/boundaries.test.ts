import { describe, expect, it } from 'vitest';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The layering rule (STYLE.md): core imports no transport and no HTTP framework, so a service
 * never knows which entry point called it. Checked over every source file of core.
 */
const FORBIDDEN = [/^hono(\/|$)/, /^@hono\//, /^@modelcontextprotocol\//, /^@ai-backend\/(transports|auth|cli)/, /^ai-backend$/, /^@trpc\/client/];
const root = path.dirname(fileURLToPath(import.meta.url));

async function* sources(dir: string): AsyncGenerator<string> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* sources(full);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && !full.includes('__tests__')) yield full;
  }
}

describe('package boundaries', () => {
  it('core imports no transport, HTTP framework or sibling package', async () => {
    const offenders: string[] = [];
    let files = 0;
    for await (const file of sources(root)) {
      files++;
      const text = await readFile(file, 'utf8');
      for (const m of text.matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)) {
        if (FORBIDDEN.some((re) => re.test(m[1]!))) offenders.push(`${path.relative(root, file)} imports ${m[1]}`);
      }
    }
    expect(files).toBeGreaterThan(50);
    expect(offenders).toEqual([]);
  });
});
