import { lstat, readFile, readdir, readlink } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'vitest';
import { CoreError } from '../../../kernel/CoreError.js';

/** Test helpers for the workspace tests (not part of the build's public surface). */

/** Await a promise that must reject with a CoreError of `code`; returns the error. */
export async function expectCode(promise: Promise<unknown>, code: string): Promise<CoreError> {
  const err = await promise.then(
    (value) => {
      throw new Error(`expected ${code}, got success: ${JSON.stringify(value)?.slice(0, 200)}`);
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CoreError);
  expect((err as CoreError).appCode, (err as Error).message).toBe(code);
  return err as CoreError;
}

/**
 * Everything under `dir` except `skip` (the workspace root): path → content (files),
 * link target (symlinks) or 'dir', plus mtimes. Compared before and after an attack to
 * prove nothing outside the root was written.
 */
export async function snapshot(dir: string, skip: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (d: string) => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (p === skip) continue;
      const st = await lstat(p);
      if (e.isSymbolicLink()) out[p] = `link:${await readlink(p)}`;
      else if (e.isDirectory()) {
        out[p] = `dir:${st.mtimeMs}`;
        await walk(p);
      } else out[p] = `file:${st.mtimeMs}:${(await readFile(p)).toString('base64')}`;
    }
  };
  await walk(dir);
  return out;
}
