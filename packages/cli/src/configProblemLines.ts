import { readFileSync } from 'node:fs';
import { jsonc } from './configFileError.js';
import { attributeToEnv, type ConfigProblem } from '@ai-backend/core/internal';
import { commandEnv } from './loadConfig.js';

type Env = Record<string, string | undefined>;

function lineColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset).split('\n');
  return { line: before.length, column: before.at(-1)!.length + 1 };
}

const segments = (p: string) =>
  p
    .split('.')
    .filter(Boolean)
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));

/** JSON: the deepest node on the path that the file has (a missing key points at its parent). */
function locateJson(text: string, problemPath: string): { line: number; column: number } | undefined {
  const { findNodeAtLocation, parseTree } = jsonc();
  const root = parseTree(text);
  if (!root) return undefined;
  const segs = segments(problemPath);
  for (let n = segs.length; n > 0; n--) {
    const node = findNodeAtLocation(root, segs.slice(0, n));
    if (node) return lineColumn(text, node.parent?.type === 'property' ? node.parent.offset : node.offset);
  }
  return undefined;
}

/** Block-style YAML: each key found on a later, deeper-indented line than its parent's. */
function locateYaml(text: string, problemPath: string): { line: number; column: number } | undefined {
  const lines = text.split('\n');
  let from = 0;
  let indent = -1;
  let found: { line: number; column: number } | undefined;
  for (const seg of segments(problemPath)) {
    if (typeof seg === 'number') return found;
    const key = new RegExp(`^(\\s*)(?:- )?["']?${seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}["']?\\s*:`);
    let hit = -1;
    for (let i = from; i < lines.length; i++) {
      const m = key.exec(lines[i]!);
      if (m && m[1]!.length > indent) {
        hit = i;
        indent = m[1]!.length;
        break;
      }
    }
    if (hit < 0) return found;
    found = { line: hit + 1, column: indent + 1 };
    from = hit + 1;
  }
  return found;
}

/**
 * Config problems as printed by the CLI. A problem whose value came from an environment
 * variable names the variable (one set in `./.env` too: the config read it from there); one in a JSON or YAML config file is followed by
 * `  at file:line:column`, pointing at the key (or the nearest enclosing key the file has).
 */
export function configProblemLines(problems: ConfigProblem[], filepath: string | null, env: Env = commandEnv()): string[] {
  const attributed = attributeToEnv(problems, env);
  let text: string | undefined;
  const kind = filepath && /\.json$/i.test(filepath) ? 'json' : filepath && /\.ya?ml$|rc$/i.test(filepath) ? 'yaml' : undefined;
  if (kind) {
    try {
      text = readFileSync(filepath!, 'utf8');
    } catch {
      text = undefined;
    }
  }
  return attributed.map((p, i) => {
    const line = `${p.path || '(root)'}: ${p.message}`;
    // Unknown keys point at the first of them, not at the object holding them (which, at the
    // root, is the whole file and has no line to name).
    const target = [p.path, p.unknownKeys?.[0]].filter(Boolean).join('.');
    if (!text || p.path !== problems[i]!.path || !target) return line; // from the environment, or the whole config
    const at = kind === 'json' ? locateJson(text, target) : locateYaml(text, target);
    // On a line of its own, so each problem line still starts with its path.
    return at ? `${line}\n  at ${filepath}:${at.line}:${at.column}` : line;
  });
}
