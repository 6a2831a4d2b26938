import type { z } from '../lib/zod.js';

/** What zod 4 hands an error map for an object with keys its schema does not know. */
interface UnknownKeysIssue {
  code: string;
  keys?: string[];
  /** The schema that raised the issue: for `unrecognized_keys`, the object schema itself. */
  inst?: unknown;
}

/** The keys the object schema that raised the issue accepts (none when it is not one zod can show). */
function shapeKeys(inst: unknown): string[] {
  const shape = (inst as { _zod?: { def?: { shape?: Record<string, z.ZodType> } } } | undefined)?._zod?.def?.shape;
  return shape ? Object.keys(shape) : [];
}

/**
 * Keys the resolved config has (`config print` shows them) but an input never sets: where the keys
 * they come from are their siblings, the note says what to set instead of guessing a spelling.
 */
const DERIVED = new Map<string, { from: string[]; note: string }>([
  ['auth', { from: ['mcp', 'jwt', 'oauth'], note: 'auth is derived from mcp.auth, jwt and oauth: set those instead' }],
]);

/**
 * The config's message for unknown keys: each with the known key it most likely misspells,
 * `unknown key(s): prot (did you mean port?), bogus`. An error map (parseOnce.ts), so it reads
 * the object schema that raised the issue, wherever it sits: inside a lazy section, a union, or a
 * section whose transform parses its entries itself (workspaces, providers). Other issues keep
 * zod's own message (undefined).
 */
export function unknownKeysMessage(issue: UnknownKeysIssue): string | undefined {
  if (issue.code !== 'unrecognized_keys' || !issue.keys) return undefined;
  const known = shapeKeys(issue.inst);
  const named = issue.keys.map((key) => {
    const derived = DERIVED.get(key);
    if (derived?.from.every((k) => known.includes(k))) return `${key} (${derived.note})`;
    const meant = closestKey(key, known);
    return meant ? `${key} (did you mean ${meant}?)` : key;
  });
  return `unknown key(s): ${named.join(', ')}`;
}

/** Edit distance where swapping two neighbouring letters counts once (`prot` → `port` is 1). */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The known key an unknown one was probably meant to be: the same letters in another case
 * (`authtype`), or the closest within one edit for short keys and two for longer ones (`typ`,
 * `prot`, `sqlte`). Undefined when nothing is that close: a wrong guess would mislead more than none.
 */
export function closestKey(unknown: string, known: readonly string[]): string | undefined {
  const lower = unknown.toLowerCase();
  const sameLetters = known.find((k) => k.toLowerCase() === lower);
  if (sameLetters) return sameLetters;
  const limit = unknown.length <= 4 ? 1 : 2;
  let best: { key: string; d: number } | undefined;
  for (const key of known) {
    const d = distance(lower, key.toLowerCase());
    if (d <= limit && (!best || d < best.d)) best = { key, d };
  }
  return best?.key;
}
