import { closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';

/**
 * The data the server keeps on disk (the SQLite database with its WAL, the OAuth store, the
 * security log) holds the encrypted vault, the ledger, key hashes and OAuth records: only the
 * service user may read it. Directories it creates are 0700 and files 0600 (the umask can only
 * narrow these).
 */
export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Creates `dir` and any missing parents as 0700; an existing directory keeps its mode. */
export function makePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
}

/**
 * Creates `file` empty as 0600 when it does not exist, so that a library opening it afterwards
 * (SQLite creates with 0644 and gives its WAL the database file's mode) finds it private.
 */
export function createPrivateFile(file: string): void {
  closeSync(openSync(file, 'a', PRIVATE_FILE_MODE));
}

/** An existing path that others can read, write or enter: its mode as octal text (`'755'`). */
export interface WidePath {
  path: string;
  mode: string;
  kind: 'directory' | 'file';
}

/** `path` when it exists and grants anything to group or others; undefined otherwise. */
export function widerThanPrivate(path: string): WidePath | undefined {
  if (!existsSync(path)) return undefined;
  const st = statSync(path);
  if ((st.mode & 0o077) === 0) return undefined;
  return { path, mode: (st.mode & 0o777).toString(8), kind: st.isDirectory() ? 'directory' : 'file' };
}
