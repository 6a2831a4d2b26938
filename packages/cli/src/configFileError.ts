import type * as ChildProcess from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import type * as JsoncParser from 'jsonc-parser';
import type { ParseError } from 'jsonc-parser';

/** jsonc-parser loads only to parse a JSON config or place a config error: `serve` without a file never needs it. */
export const jsonc = (): typeof JsoncParser => createRequire(import.meta.url)('jsonc-parser') as typeof JsoncParser;
/** node:child_process likewise, only to locate a JavaScript config's syntax error. */
const childProcess = (): typeof ChildProcess => createRequire(import.meta.url)('node:child_process') as typeof ChildProcess;

/** A config file that cannot be parsed, with where: `file:line:column: message`. */
export class ConfigFileError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    readonly column: number,
    readonly reason: string,
  ) {
    super(`${file}:${line}:${column}: ${reason}`);
    this.name = 'ConfigFileError';
  }
}

function lineColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset).split('\n');
  return { line: before.length, column: before.at(-1)!.length + 1 };
}

/**
 * Parse a JSON config. JSON.parse's messages on Node 20 carry no position, so on failure the
 * text is re-read with jsonc-parser (comments and trailing commas disallowed) to locate the error.
 */
export function parseJsonConfig(file: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    const errors: ParseError[] = [];
    jsonc().parse(text, errors, { disallowComments: true, allowTrailingComma: false });
    const first = errors[0];
    const at = lineColumn(text, first?.offset ?? 0);
    throw new ConfigFileError(
      file,
      at.line,
      at.column,
      first ? `invalid JSON: ${jsonc().printParseErrorCode(first.error)}` : (err as Error).message,
    );
  }
}

/**
 * Where a JavaScript config's syntax error is. `import()` of a broken ES module reports no
 * position on Node 20; `node --check` does (`file:LINE`, the line, a caret under the column).
 */
export function locateSyntaxError(file: string, err: unknown): ConfigFileError | undefined {
  if (!(err instanceof SyntaxError)) return undefined;
  let out = '';
  try {
    childProcess().execFileSync(process.execPath, ['--check', file], {
      stdio: ['ignore', 'ignore', 'pipe'],
      encoding: 'utf8',
      timeout: 10_000,
    });
    return undefined; // parses on its own: the syntax error came from something it imports
  } catch (checkErr) {
    out = String((checkErr as { stderr?: string }).stderr ?? '');
  }
  const m = new RegExp(`^(?:file://)?${escapeRegExp(file)}:(\\d+)\\n(.*)\\n( *)\\^`, 'm').exec(out);
  const reason = /^SyntaxError: .*$/m.exec(out)?.[0] ?? `SyntaxError: ${err.message}`;
  if (!m) return new ConfigFileError(file, 1, 1, reason);
  return new ConfigFileError(file, Number(m[1]), m[3]!.length + 1, reason);
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * cosmiconfig loader for YAML configs (`.yaml`, `.yml`, `.ai-backendrc`). Its own YAML errors quote
 * the lines around the fault, and a config's lines may hold a secret (`jwt.secret: ...`) that would
 * then reach a terminal or a CI log: a parse error says `file:line:column: invalid YAML: reason`
 * only, as JSON and JavaScript configs do.
 */
export const loadYaml = async (file: string, content: string): Promise<unknown> => {
  const { defaultLoaders } = await import('cosmiconfig');
  try {
    return await defaultLoaders['.yaml'](file, content);
  } catch (err) {
    const { mark, reason } = err as { mark?: { line?: number; column?: number }; reason?: string };
    if (typeof reason !== 'string') throw err;
    throw new ConfigFileError(path.resolve(file), (mark?.line ?? 0) + 1, (mark?.column ?? 0) + 1, `invalid YAML: ${reason}`);
  }
};

/** cosmiconfig loader for JSON configs (its own JSON errors have no line or column). */
export const loadJson = (file: string, content?: string): unknown =>
  parseJsonConfig(path.resolve(file), content ?? readFileSync(file, 'utf8'));
