import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { TYPES_CHECKED } from '@ai-backend/test-utils';
import * as internal from './internal.js';
import * as publicEntry from './index.js';

/**
 * `@ai-backend/core` exports what the docs document, no more: adding a name to the public entry is
 * a decision made here (and in the docs), not a side effect of `export *`. Everything else stays
 * reachable for the workspace packages through `@ai-backend/core/internal`.
 */
const PUBLIC_VALUES = [
  'ALERT_SIGNATURE_HEADER',
  'ConfigError',
  'ConfigSchema',
  'CoreError',
  'ENV_VARIABLES',
  'KEY_SCOPES',
  'MemoryStorage',
  'adminProcedure',
  'checkConfig',
  'configFromEnv',
  'createHttpSchemeHandlers',
  'createStorage',
  'defineConfig',
  'handlePurchaseWebhook',
  'isCoreError',
  'mergeConfig',
  'mergeRouters',
  'middleware',
  'protectedProcedure',
  'publicProcedure',
  'redactConfig',
  'resolveConfig',
  'router',
  'signAlert',
  'verifyAlertSignature',
  'verifyPurchaseWebhook',
  'withServices',
];

describe('the public surface of @ai-backend/core', () => {
  it('exports exactly the documented values', () => {
    expect(Object.keys(publicEntry).sort()).toEqual([...PUBLIC_VALUES].sort());
  });

  it('is a subset of the internal entry, with the same objects (one CoreError class, one router builder)', () => {
    for (const name of PUBLIC_VALUES)
      expect((internal as Record<string, unknown>)[name], name).toBe((publicEntry as Record<string, unknown>)[name]);
    expect(Object.keys(internal).length).toBeGreaterThan(PUBLIC_VALUES.length * 4);
  });

  it('is what ai-backend re-exports from: the package users install never reaches into internal', () => {
    const cliEntry = readFileSync(new URL('../../cli/src/index.ts', import.meta.url), 'utf8');
    expect(cliEntry).toContain("from '@ai-backend/core';");
    expect(cliEntry).not.toContain('@ai-backend/core/internal');
  });
});

/** The entry points users import: the package they install, and core's documented API. */
const PUBLIC_ENTRIES = ['ai-backend', '@ai-backend/core'];
const ROOT = path.resolve(import.meta.dirname, '../../..');

/**
 * What the public declarations reach, as users' TypeScript sees it: the built .d.ts of the public
 * entries (resolved like a user's project, through the packages' `types` exports), every exported
 * symbol, and from each declaration every type it names, recursively, as far as our packages go.
 * Returns the files declaring what was reached and, per internal name in `watch`, the paths by which
 * a public declaration names it.
 */
function publicDeclarations(entries: string[], watch: string): { files: ts.SourceFile[]; named: string[] } {
  const probe = path.join(ROOT, '__public_surface_probe__.ts');
  const text = entries.map((e, i) => `export * as e${i} from '${e}';`).join('\n');
  const host = ts.createCompilerHost({});
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  host.getSourceFile = (f, ...rest) =>
    f === probe ? ts.createSourceFile(f, text, ts.ScriptTarget.ES2022, true) : getSourceFile(f, ...rest);
  host.fileExists = (f) => f === probe || fileExists(f);
  const options = { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, noEmit: true, types: [] };
  const program = ts.createProgram([probe], options, host);
  const checker = program.getTypeChecker();
  const ours = (d: ts.Declaration) => /\/packages\/[^/]+\/dist\//.test(d.getSourceFile().fileName);
  const resolve = (s: ts.Symbol | undefined) => (s && s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s);
  const seen = new Set<ts.Declaration>();
  const queue: [ts.Declaration, string][] = [];
  const reach = (symbol: ts.Symbol | undefined, via: string) => {
    for (const d of resolve(symbol)?.declarations ?? [])
      if (ours(d) && !seen.has(d)) {
        seen.add(d);
        queue.push([d, `${via} > ${resolve(symbol)!.name}`]);
      }
  };
  const probeModule = checker.getSymbolAtLocation(program.getSourceFile(probe)!)!;
  for (const ns of checker.getExportsOfModule(probeModule))
    for (const s of checker.getExportsOfModule(resolve(ns)!)) reach(s, entries[Number(ns.name.slice(1))]!);
  const named: string[] = [];
  for (let next = queue.shift(); next; next = queue.shift()) {
    const [decl, via] = next;
    const visit = (n: ts.Node): void => {
      const name = ts.isTypeReferenceNode(n)
        ? n.typeName
        : ts.isExpressionWithTypeArguments(n)
          ? n.expression
          : ts.isTypeQueryNode(n)
            ? n.exprName
            : ts.isImportTypeNode(n)
              ? n.qualifier
              : undefined;
      if (name) {
        const symbol = resolve(checker.getSymbolAtLocation(name));
        if (symbol?.name === watch) named.push(via);
        reach(symbol, via);
      }
      ts.forEachChild(n, visit);
    };
    visit(decl);
  }
  return { files: [...new Set([...seen].map((d) => d.getSourceFile()))], named };
}

/** Does this file name `name` anywhere in its code (an import, a parameter's type), comments aside? */
function namesIdentifier(file: ts.SourceFile, name: string): boolean {
  const visit = (n: ts.Node): boolean => (ts.isIdentifier(n) && n.text === name) || (ts.forEachChild(n, visit) ?? false);
  return visit(file);
}

describe.skipIf(TYPES_CHECKED)('the public declarations (built .d.ts) never name the internal Runtime', () => {
  it('neither in a type a public export reaches nor anywhere in a file declaring one (go to definition lands there)', () => {
    for (const dir of ['core', 'auth', 'transports', 'cli'])
      expect(existsSync(path.join(ROOT, 'packages', dir, 'dist/index.d.ts')), `packages/${dir} is built (pnpm build)`).toBe(true);
    const { files, named } = publicDeclarations(PUBLIC_ENTRIES, 'Runtime');
    expect(named).toEqual([]);
    const naming = files.filter((f) => namesIdentifier(f, 'Runtime')).map((f) => path.relative(ROOT, f.fileName));
    expect(naming).toEqual([]);
    // The walk reaches what it should: createServer's and the procedure builders' declarations.
    const reached = files.map((f) => path.relative(ROOT, f.fileName));
    expect(reached).toEqual(
      expect.arrayContaining(['packages/transports/dist/createServer.d.ts', 'packages/core/dist/pipeline/procedures.d.ts']),
    );
  }, 120_000);

  it('the walk sees an internal entry naming it (the check can fail)', () => {
    const { named } = publicDeclarations(['@ai-backend/core/internal'], 'Runtime');
    expect(named.length).toBeGreaterThan(0);
  }, 120_000);
});
