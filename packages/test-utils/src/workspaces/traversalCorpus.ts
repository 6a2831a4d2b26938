import { mkdir, mkdtemp, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/**
 * Hostile paths for server workspace file procedures, shared by the unit tests here and the
 * end-to-end tests (/rpc, /trpc, MCP tools/call). Every vector must be refused by readFile,
 * writeFile, pathExists and listFiles, and nothing outside the workspace root may be read
 * or written. Paths with `{ROOT}` / `{OUTSIDE}` are expanded against a fixture
 * (`expandCorpus`), which `createTraversalFixture` builds.
 *
 * `lexical: true` vectors are refused before any disk access, so the answer is always
 * 'access denied'. The others (symlinks) may also be answered 'not found' (a dangling link
 * read with followSymlinks on) or reported as not existing, never with content.
 */
export interface TraversalVector {
  path: string;
  why: string;
  lexical: boolean;
}

const v = (path: string, why: string, lexical = true): TraversalVector => ({ path, why, lexical });

export const TRAVERSAL_CORPUS: readonly TraversalVector[] = [
  // Plain dot-dot traversal (OWASP)
  v('../secret.txt', 'parent directory'),
  v('../../etc/passwd', 'two levels up'),
  v('../../../../../../../../../../etc/passwd', 'deep climb to /'),
  v('./../secret.txt', 'dot then dot-dot'),
  v('sub/../../secret.txt', 'descend then climb out'),
  v('sub/./../../secret.txt', 'dot component inside climb'),
  v('..', 'bare dot-dot'),
  v('../', 'dot-dot with trailing slash'),
  v('../root_evil/secret.txt', 'sibling directory sharing the root prefix (CVE-2025-53110)'),
  v('../root/../secret.txt', 'out and back in, then out'),
  v('sub/../.env', 'dot-dot used to dodge a **/.env block'),
  v('....//....//secret.txt', 'filter bypass: stripping ../ leaves ../'),
  v('..././secret.txt', 'filter bypass variant'),
  v('.../secret.txt', 'three dots'),
  v('sub/..', 'climb back to the root through dot-dot'),
  // Absolute, home and scheme forms
  v('/etc/passwd', 'absolute path'),
  v('{OUTSIDE}/secret.txt', 'absolute path of the outside secret'),
  v('{ROOT}_evil/secret.txt', 'absolute sibling-prefix path'),
  v('{ROOT}/../secret.txt', 'absolute root then climb'),
  v('{ROOT}/notes.txt', 'absolute path inside the root (still absolute)'),
  v('//etc/passwd', 'double slash (POSIX may treat as UNC)'),
  v('///etc/passwd', 'triple slash'),
  v('file:///etc/passwd', 'file URL'),
  v('~/secret.txt', 'home directory shorthand'),
  v('~root/.ssh/id_rsa', 'other user home shorthand'),
  // Backslashes, drive letters, UNC
  v('..\\secret.txt', 'backslash separator'),
  v('..\\..\\windows\\win.ini', 'Windows traversal'),
  v('sub\\..\\..\\secret.txt', 'backslash climb out'),
  v('..\\/secret.txt', 'mixed separators'),
  v('\\secret.txt', 'rooted backslash'),
  v('C:\\Windows\\win.ini', 'drive letter with backslashes'),
  v('C:/Windows/win.ini', 'drive letter with slashes'),
  v('c:secret.txt', 'drive-relative path'),
  v('\\\\server\\share\\secret.txt', 'UNC path'),
  v('\\\\?\\C:\\secret.txt', 'Win32 device namespace'),
  v('//server/share/secret.txt', 'UNC with forward slashes'),
  v('notes.txt::$DATA', 'NTFS alternate data stream'),
  // URL encoding, double encoding, IIS %u
  v('%2e%2e/secret.txt', 'encoded dots'),
  v('%2e%2e%2fsecret.txt', 'encoded dots and slash'),
  v('..%2fsecret.txt', 'encoded slash'),
  v('%2E%2E/secret.txt', 'upper-case encoded dots'),
  v('.%2e/secret.txt', 'half-encoded dot-dot'),
  v('%2e%2e%5csecret.txt', 'encoded backslash'),
  v('..%5csecret.txt', 'encoded backslash only'),
  v('%252e%252e/secret.txt', 'double-encoded dots'),
  v('%252e%252e%252fsecret.txt', 'double-encoded dots and slash'),
  v('..%252fsecret.txt', 'double-encoded slash'),
  v('%25%32%65%25%32%65/secret.txt', 'percent-encoded percent escapes'),
  v('%u002e%u002e/secret.txt', 'IIS %u encoding'),
  v('%uff0e%uff0e/secret.txt', 'IIS %u fullwidth dots'),
  v('notes.txt%00.md', 'encoded NUL before an allowed extension'),
  v('..%00/secret.txt', 'encoded NUL after dot-dot'),
  // Overlong UTF-8 (encoded and as decoded by a lenient parser), Unicode look-alikes
  v('%c0%ae%c0%ae/secret.txt', 'overlong UTF-8 dots'),
  v('%c0%2e%c0%2e/secret.txt', 'overlong UTF-8 variant'),
  v('%e0%80%ae%e0%80%ae/secret.txt', 'three-byte overlong dots'),
  v('..%c0%afsecret.txt', 'overlong UTF-8 slash'),
  v('..%c1%9csecret.txt', 'overlong UTF-8 backslash'),
  v('\uFFFD\uFFFD/secret.txt', 'overlong bytes after lossy decoding'),
  v('\uD800../secret.txt', 'lone surrogate'),
  v('\uFF0E\uFF0E/secret.txt', 'fullwidth full stops'),
  v('..\uFF0Fsecret.txt', 'fullwidth solidus'),
  v('..\u2215secret.txt', 'division slash'),
  v('..\uFF3Csecret.txt', 'fullwidth reverse solidus'),
  v('\u2024\u2024/secret.txt', 'one-dot leaders'),
  v('sub/\u202Etxt.env', 'right-to-left override disguising a name'),
  // NUL bytes and controls
  v('../secret.txt\u0000.md', 'NUL truncation after traversal'),
  v('notes.txt\u0000', 'trailing NUL'),
  v('\u0000../secret.txt', 'leading NUL'),
  v('sub/\nnotes.txt', 'newline in a name'),
  // Trailing dots and spaces (Windows trims them)
  v('.. /secret.txt', 'dot-dot with trailing space'),
  v('../secret.txt.', 'trailing dot after traversal'),
  v('.env.', 'trailing dot to dodge a blocked name'),
  v('.env ', 'trailing space to dodge a blocked name'),
  v('id.key.', 'trailing dot to dodge a blocked extension'),
  // Blocked names: case variants, normalisation, double extensions
  v('.env', 'blocked by **/.env'),
  v('.ENV', 'upper-case blocked name'),
  v('.Env', 'mixed-case blocked name'),
  v('sub/.env', 'blocked at depth'),
  v('./.env', 'dot prefix on a blocked name'),
  v('sub//.env', 'double slash before a blocked name'),
  v('private/data.txt', 'inside a blocked folder'),
  v('PRIVATE/data.txt', 'upper-case blocked folder'),
  v('Private/data.txt', 'mixed-case blocked folder'),
  v('id.key', 'blocked extension'),
  v('id.KEY', 'upper-case blocked extension'),
  v('id.key.txt', 'blocked extension hidden by a double extension'),
  v('config.env.txt', 'blocked .env extension inside a double extension'),
  // Symbolic links (the fixture creates them)
  v('link-out', 'file symlink to a file outside the root (CVE-2025-53109)', false),
  v('dir-out/secret.txt', 'directory symlink to outside, as a parent', false),
  v('dir-out/root_evil/secret.txt', 'directory symlink to outside, sibling prefix', false),
  v('dir-etc/passwd', 'directory symlink to /etc', false),
  v('sub/up/secret.txt', 'nested directory symlink climbing out', false),
  v('chain', 'symlink to a symlink that leaves the root', false),
  v('evil-link', 'symlink to the sibling-prefix directory', false),
  v('evil-link/secret.txt', 'through the sibling-prefix symlink', false),
  v('dangling-out', 'dangling symlink pointing outside (write through it)', false),
  v('alias-env', 'in-root symlink to a blocked file', false),
];

/** The secret planted outside the root; it must never appear in any answer. */
export const TRAVERSAL_SECRET = 'TOP-SECRET-outside-the-workspace-3f9c';

export interface TraversalFixture {
  /** Temporary folder holding everything; remove it after the test. */
  base: string;
  /** The workspace root. */
  root: string;
  /** Files outside the root that must stay unread and unchanged. */
  outsideFiles: string[];
  /** Workspace config for the root (blocked names, extensions); set followSymlinks per run. */
  config: (opts?: { followSymlinks?: boolean }) => TraversalWorkspaceConfig;
}

/**
 * The workspace config the fixture needs, written out here (a structural subset of core's
 * `WorkspaceConfigInput`) so this private package does not depend on core, which depends on it.
 */
export interface TraversalWorkspaceConfig {
  path: string;
  blockedPaths: string[];
  blockedExtensions: string[];
  followSymlinks: boolean;
}

/**
 * Build the fixture: `<base>/root` (the workspace), `<base>/secret.txt` and
 * `<base>/root_evil/secret.txt` outside it, and the symlinks the corpus names.
 */
export async function createTraversalFixture(parent = os.tmpdir()): Promise<TraversalFixture> {
  const base = await mkdtemp(path.join(parent, 'aib-traversal-'));
  const root = path.join(base, 'root');
  await mkdir(path.join(root, 'sub'), { recursive: true });
  await mkdir(path.join(root, 'private'), { recursive: true });
  await mkdir(path.join(base, 'root_evil'), { recursive: true });
  const outsideFiles = [path.join(base, 'secret.txt'), path.join(base, 'root_evil', 'secret.txt')];
  for (const f of outsideFiles) await writeFile(f, TRAVERSAL_SECRET);
  await writeFile(path.join(root, 'notes.txt'), 'inside notes');
  await writeFile(path.join(root, '.env'), 'INSIDE_BLOCKED=1');
  await writeFile(path.join(root, 'sub', '.env'), 'INSIDE_BLOCKED=2');
  await writeFile(path.join(root, 'private', 'data.txt'), 'private data');
  await writeFile(path.join(root, 'id.key'), 'private key');
  await writeFile(path.join(root, 'id.key.txt'), 'private key copy');
  await writeFile(path.join(root, 'config.env.txt'), 'A=1');
  await symlink('../secret.txt', path.join(root, 'link-out'));
  await symlink('..', path.join(root, 'dir-out'));
  await symlink('/etc', path.join(root, 'dir-etc'));
  await symlink('../..', path.join(root, 'sub', 'up'));
  await symlink('link-out', path.join(root, 'chain'));
  await symlink('../root_evil', path.join(root, 'evil-link'));
  await symlink('../created-through-dangling.txt', path.join(root, 'dangling-out'));
  await symlink('.env', path.join(root, 'alias-env'));
  return {
    base,
    root,
    outsideFiles,
    config: (opts = {}) => ({
      path: root,
      blockedPaths: ['**/.env', 'private/**'],
      blockedExtensions: ['.key', '.pem', '.env'],
      followSymlinks: opts.followSymlinks ?? false,
    }),
  };
}

/** The corpus with `{ROOT}` and `{OUTSIDE}` replaced for a fixture. */
export function expandCorpus(fixture: Pick<TraversalFixture, 'root' | 'base'>): TraversalVector[] {
  return TRAVERSAL_CORPUS.map((t) => ({ ...t, path: t.path.replaceAll('{ROOT}', fixture.root).replaceAll('{OUTSIDE}', fixture.base) }));
}
