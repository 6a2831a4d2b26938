import type Micromatch from 'micromatch';
import { lazyRequire } from '../../lib/lazyRequire.js';

const micromatch = lazyRequire<typeof Micromatch>('micromatch');
import type { WorkspaceConfig } from '../../config/sections/workspaces.js';

/** The part of a workspace config rules 3 and 4 read. */
export type PolicyConfig = Pick<WorkspaceConfig, 'allowedPaths' | 'blockedPaths' | 'allowedExtensions' | 'blockedExtensions'>;

type Matcher = (path: string) => boolean;

/**
 * Rules 3 and 4, applied to normalised relative paths only (never to caller input), so
 * `foo/../.env` or `./.env` cannot dodge a `**\/.env` block. Pure: no filesystem access.
 *
 * - blockedPaths: case-insensitive, `dot: true`, and a pattern without a slash matches the
 *   name at any depth (`.env` blocks `a/b/.env`). A path is blocked when it or any of its parent
 *   directories matches, so blocking `secrets/**` or `secrets` hides the whole folder.
 * - allowedPaths: case-sensitive, `dot: true`, matched against the whole relative path of a
 *   file (write `src/**` to allow a folder's content). A directory is reachable when it could
 *   contain an allowed file (it lies on the way to, or under, a pattern's fixed prefix).
 * - blockedExtensions: checked against every suffix of every name in the path (`x.env.txt` →
 *   `.env`, `.txt`, `.env.txt`), case-insensitive; dotfiles count (`.env` has the suffix `.env`).
 *   They apply to folders too.
 * - allowedExtensions: a file name must end with one of them, case-insensitive (so `.tar.gz`
 *   works). They do not apply to folders.
 */
export class PathPolicy {
  private readonly blocked: Matcher[];
  private readonly allowed: Matcher[] | undefined;
  /** Fixed prefixes of the allowed patterns; `''` when a pattern can match anywhere. */
  private readonly allowedBases: Array<{ base: string; glob: boolean }>;
  private readonly blockedExt: Set<string>;
  private readonly allowedExt: string[] | undefined;

  constructor(config: PolicyConfig) {
    this.blocked = (config.blockedPaths ?? []).map((p) => {
      const m = micromatch().matcher(p, { dot: true, nocase: true });
      // A slash-free pattern matches the last name (micromatch's own `basename` option
      // mis-handles patterns that do contain slashes, so it is done here).
      return p.includes('/') ? m : (rel: string) => m(rel.slice(rel.lastIndexOf('/') + 1));
    });
    this.allowed = config.allowedPaths?.map((p) => micromatch().matcher(p, { dot: true }));
    this.allowedBases = (config.allowedPaths ?? []).map((p) => {
      const scan = micromatch().scan(p);
      // A negated pattern allows almost everything, so any directory may hold a match.
      const base = scan.negated ? '' : scan.base.replace(/^\.\//, '').replace(/\/+$/, '');
      return { base, glob: scan.isGlob || scan.negated };
    });
    this.blockedExt = new Set((config.blockedExtensions ?? []).map((e) => e.toLowerCase()));
    this.allowedExt = config.allowedExtensions?.map((e) => e.toLowerCase());
  }

  /**
   * Never reachable: the path itself or any parent directory matches blockedPaths, or any of
   * their names carries a blocked extension (so a folder `keys.pem/` hides its content too).
   */
  isBlocked(rel: string): boolean {
    if ((this.blocked.length === 0 && this.blockedExt.size === 0) || rel === '') return false;
    // Normalisation-insensitive file systems (APFS) open `café` for `cafe\u0301`: check both forms.
    // Case-insensitive ones fold more than ASCII: NTFS upper-cases `ſ` to `S` and `ı` to `I`, so
    // `ſecrets` or `.gıt` would open `secrets` or `.git`; the compatibility-folded, upper-cased
    // form catches those (and fullwidth `ｓｅｃｒｅｔｓ`).
    if (/[^\u0000-\u007f]/.test(rel)) {
      return [rel, rel.normalize('NFC'), rel.normalize('NFD'), rel.normalize('NFKC').toUpperCase()].some((form) => this.blockedForm(form));
    }
    return this.blockedForm(rel);
  }

  private blockedForm(rel: string): boolean {
    let start = 0;
    for (;;) {
      const end = rel.indexOf('/', start);
      const prefix = end === -1 ? rel : rel.slice(0, end);
      if (this.blocked.some((m) => m(prefix))) return true;
      if (this.blockedExt.size > 0 && nameSuffixes(prefix.slice(start).toLowerCase()).some((s) => this.blockedExt.has(s))) return true;
      if (end === -1) return false;
      start = end + 1;
    }
  }

  /** A file at `rel` may be read, written, listed or reported as existing. */
  fileAllowed(rel: string): boolean {
    if (rel === '' || this.isBlocked(rel)) return false;
    if (this.allowed && !this.allowed.some((m) => m(rel))) return false;
    return this.extensionAllowed(rel.slice(rel.lastIndexOf('/') + 1));
  }

  /** A directory at `rel` may be listed, entered or reported as existing. The root always may. */
  dirAllowed(rel: string): boolean {
    if (rel === '') return true;
    if (this.isBlocked(rel)) return false;
    if (!this.allowed) return true;
    if (this.allowed.some((m) => m(rel))) return true;
    return this.allowedBases.some(({ base, glob }) => {
      if (base === '' || base === rel || base.startsWith(rel + '/')) return true; // on the way to the base
      return glob && rel.startsWith(base + '/'); // under a glob's base: a match may lie deeper
    });
  }

  /** allowedExtensions on a file name (blocked extensions are part of isBlocked). */
  private extensionAllowed(name: string): boolean {
    if (!this.allowedExt) return true;
    const lower = name.toLowerCase();
    return this.allowedExt.some((e) => lower.endsWith(e));
  }
}

/**
 * Every extension-like suffix of a (lower-cased) name: each single `.part` after the first
 * character position and each compound tail. `x.env.txt` → `.env`, `.txt`, `.env.txt`;
 * `.env.local` → `.env`, `.local`, `.env.local`.
 */
export function nameSuffixes(name: string): string[] {
  const parts = name.split('.');
  const out: string[] = [];
  for (let i = 1; i < parts.length; i++) {
    if (parts[i] === '') continue;
    out.push('.' + parts[i]);
    if (i < parts.length - 1) out.push('.' + parts.slice(i).join('.'));
  }
  return out;
}
