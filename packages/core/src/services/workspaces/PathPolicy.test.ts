import { describe, expect, it } from 'vitest';
import { PathPolicy, nameSuffixes } from './PathPolicy.js';

describe('PathPolicy rule 3 (allowedPaths / blockedPaths)', () => {
  it('without rules everything is reachable except the root as a file', () => {
    const p = new PathPolicy({});
    expect(p.fileAllowed('a/b.txt')).toBe(true);
    expect(p.dirAllowed('a')).toBe(true);
    expect(p.fileAllowed('')).toBe(false);
    expect(p.dirAllowed('')).toBe(true);
  });

  it('blockedPaths: case-insensitive, dotfiles, any depth, whole folders', () => {
    const p = new PathPolicy({ blockedPaths: ['**/.env', 'secrets', 'build/**/*.map'] });
    for (const blocked of ['.env', '.ENV', 'a/b/.Env', 'secrets', 'secrets/x.txt', 'a/SECRETS/deep/y', 'build/js/app.js.map']) {
      expect(p.fileAllowed(blocked), blocked).toBe(false);
    }
    expect(p.dirAllowed('secrets')).toBe(false);
    expect(p.dirAllowed('a/secrets')).toBe(false); // a slash-free pattern matches the name at any depth
    for (const ok of ['.envrc', 'env', 'secrets.md', 'build/js/app.js', 'a/.env.example']) {
      expect(p.fileAllowed(ok), ok).toBe(true);
    }
  });

  it('allowedPaths: only matching files, folders only on the way to a match', () => {
    const p = new PathPolicy({ allowedPaths: ['docs/**', 'src/**/*.ts', 'README.md'] });
    expect(p.fileAllowed('docs/a/b.md')).toBe(true);
    expect(p.fileAllowed('src/x/y.ts')).toBe(true);
    expect(p.fileAllowed('README.md')).toBe(true);
    expect(p.fileAllowed('readme.md')).toBe(false); // allowed is case-sensitive (stricter)
    expect(p.fileAllowed('src/x/y.js')).toBe(false);
    expect(p.fileAllowed('package.json')).toBe(false);
    expect(p.dirAllowed('docs')).toBe(true);
    expect(p.dirAllowed('docs/deep/er')).toBe(true);
    expect(p.dirAllowed('src')).toBe(true);
    expect(p.dirAllowed('src/lib')).toBe(true);
    expect(p.dirAllowed('node_modules')).toBe(false);
    expect(p.dirAllowed('secret-project')).toBe(false);
  });

  it('blockedPaths match composed and decomposed Unicode alike', () => {
    const p = new PathPolicy({ blockedPaths: ['café/**'], blockedExtensions: ['.résumé'] });
    expect(p.fileAllowed('café/x.txt')).toBe(false);
    expect(p.fileAllowed('cafe\u0301/x.txt')).toBe(false);
    expect(p.fileAllowed('cv.re\u0301sume\u0301')).toBe(false);
    expect(p.fileAllowed('cafe/x.txt')).toBe(true);
  });

  it('blocked rules hold for names a case-insensitive file system folds onto them (ſ, ı, fullwidth)', () => {
    const p = new PathPolicy({ blockedPaths: ['secrets', '**/.git'], blockedExtensions: ['.pem', '.sql'] });
    // NTFS upper-cases `ſ` to `S` and `ı` to `I`: these open `secrets/`, `.git/` and `db.sql` there.
    expect(p.fileAllowed('\u017Fecrets/x.txt')).toBe(false);
    expect(p.dirAllowed('a/.g\u0131t')).toBe(false);
    expect(p.fileAllowed('db.\u017Fql')).toBe(false);
    expect(p.fileAllowed('\uFF53\uFF45\uFF43\uFF52\uFF45\uFF54\uFF53/x.txt')).toBe(false);
    expect(p.fileAllowed('key.\uFF50\uFF45\uFF4D')).toBe(false);
    // Other non-ASCII names stay reachable.
    expect(p.fileAllowed('caf\u00E9/s\u00FC\u00DF.txt')).toBe(true);
  });

  it('blocked wins over allowed', () => {
    const p = new PathPolicy({ allowedPaths: ['**'], blockedPaths: ['**/.git/**', '**/.git'] });
    expect(p.fileAllowed('a.txt')).toBe(true);
    expect(p.fileAllowed('.git/config')).toBe(false);
    expect(p.dirAllowed('sub/.git')).toBe(false);
  });
});

describe('PathPolicy rule 4 (extensions)', () => {
  it('nameSuffixes lists single and compound suffixes, dotfiles included', () => {
    expect(nameSuffixes('x.env.txt').sort()).toEqual(['.env', '.env.txt', '.txt']);
    expect(nameSuffixes('.env')).toEqual(['.env']);
    expect(nameSuffixes('makefile')).toEqual([]);
    expect(nameSuffixes('a..b').sort()).toEqual(['.b']);
  });

  it('blockedExtensions: case-insensitive, every suffix, folders too', () => {
    const p = new PathPolicy({ blockedExtensions: ['.env', '.PEM'] });
    for (const blocked of ['.env', 'x.ENV', 'x.env.txt', 'prod.env.local', 'cert.pem', 'CERT.Pem', 'keys.pem/readme.txt']) {
      expect(p.fileAllowed(blocked), blocked).toBe(false);
    }
    expect(p.dirAllowed('keys.pem')).toBe(false);
    for (const ok of ['environment.txt', 'x.envy', 'pem', 'a/b.txt']) expect(p.fileAllowed(ok), ok).toBe(true);
  });

  it('allowedExtensions: the final extension (or a compound one), files only', () => {
    const p = new PathPolicy({ allowedExtensions: ['.md', '.TXT', '.tar.gz'] });
    for (const ok of ['a.md', 'b/C.MD', 'x.env.txt', 'pkg.tar.gz', 'notes.Txt']) expect(p.fileAllowed(ok), ok).toBe(true);
    for (const bad of ['a.js', 'Makefile', 'x.md.js', 'pkg.gz', '.env']) expect(p.fileAllowed(bad), bad).toBe(false);
    expect(p.dirAllowed('src')).toBe(true);
  });

  it('double extension: blocked checks every suffix, allowed only the final one', () => {
    const p = new PathPolicy({ allowedExtensions: ['.txt'], blockedExtensions: ['.env'] });
    expect(p.fileAllowed('x.env.txt')).toBe(false);
    expect(p.fileAllowed('x.txt')).toBe(true);
    expect(p.fileAllowed('x.txt.env')).toBe(false);
  });
});
