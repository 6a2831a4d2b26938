/** Most type annotations plus referential-equality paths one superjson `meta` may carry. */
export const MAX_META_ENTRIES = 1000;
/** Most segments in one path of a `meta` (a path deeper than the JSON itself can go nowhere). */
const MAX_PATH_SEGMENTS = 64;
/**
 * Most index steps all of a `meta`'s paths may ask for, summed: superjson reaches the n-th item
 * of a Set or Map by walking n items, for every segment of every path, so a few hundred paths
 * through item 99,999 of a large Set block the event loop for tens of seconds. A million steps
 * take milliseconds and leave any real input's paths (indexes far smaller) their room.
 */
const MAX_INDEX_STEPS = 1_000_000;

const SIMPLE_TYPES = new Set(['undefined', 'bigint', 'Date', 'regexp', 'set', 'map', 'Error', 'URL', 'number']);
/**
 * Composite annotations: none. 'class', 'symbol' and 'custom' need registrations we never make;
 * 'typed-array' turns a number n into an n-element array (a few bytes of input, gigabytes of
 * memory), and no procedure takes one.
 */
const COMPOSITE_TYPES = new Set<string>();

/** What one call's `meta` may still spend: entries, and index steps (MAX_INDEX_STEPS). */
interface Budget {
  left: number;
  steps: number;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Bounds and shape of superjson `meta` in a tRPC input, checked before superjson walks it:
 * superjson's cost grows with the annotations and path segments, not with the bytes (50,000
 * annotations in 1 MiB block the event loop for 1.6 s), and a malformed meta makes it throw
 * library messages. Returns a problem, or null when every call's meta is acceptable.
 */
export function superjsonMetaProblem(input: unknown, batch: boolean): string | null {
  if (!isRecord(input)) return null;
  // One call is { json, meta }; a batch (`?batch=1`, as tRPC decides it) is { "0": { json, meta }, "1": ... }.
  const calls = batch ? Object.values(input) : [input];
  for (const call of calls) {
    if (!isRecord(call) || call.meta === undefined) continue;
    const budget: Budget = { left: MAX_META_ENTRIES, steps: MAX_INDEX_STEPS };
    if (!metaOk(call.meta, budget)) {
      if (budget.left < 0) return `input meta has more than ${MAX_META_ENTRIES} entries`;
      return budget.steps < 0 ? `input meta paths index more than ${MAX_INDEX_STEPS} items` : 'malformed input meta';
    }
  }
  return null;
}

function metaOk(meta: unknown, budget: Budget): boolean {
  if (!isRecord(meta)) return false;
  for (const key of Object.keys(meta)) if (key !== 'values' && key !== 'referentialEqualities' && key !== 'v') return false;
  if (meta.v !== undefined && typeof meta.v !== 'number') return false;
  if (meta.values !== undefined) {
    const values = meta.values;
    const ok = Array.isArray(values)
      ? treeOk(values, budget)
      : isRecord(values) && Object.entries(values).every(([k, t]) => pathOk(k, budget) && treeOk(t, budget));
    if (!ok) return false;
  }
  const eq = meta.referentialEqualities;
  if (eq !== undefined) {
    if (Array.isArray(eq)) {
      if (eq.length < 1 || eq.length > 2 || !pathListOk(eq[0], budget) || (eq.length === 2 && !equalitiesOk(eq[1], budget))) return false;
    } else if (!equalitiesOk(eq, budget)) return false;
  }
  return budget.left >= 0;
}

/** A tree node: [annotation] or [annotation, { key: node }]. */
function treeOk(node: unknown, budget: Budget): boolean {
  if (!Array.isArray(node) || node.length < 1 || node.length > 2) return false;
  if (--budget.left < 0) return false;
  const [annotation, children] = node as [unknown, unknown];
  const annotationOk =
    typeof annotation === 'string'
      ? SIMPLE_TYPES.has(annotation)
      : Array.isArray(annotation) &&
        annotation.length === 2 &&
        COMPOSITE_TYPES.has(annotation[0] as string) &&
        typeof annotation[1] === 'string';
  if (!annotationOk) return false;
  if (children === undefined) return true;
  return isRecord(children) && Object.entries(children).every(([k, t]) => pathOk(k, budget) && treeOk(t, budget));
}

function equalitiesOk(eq: unknown, budget: Budget): boolean {
  return isRecord(eq) && Object.entries(eq).every(([k, list]) => pathOk(k, budget) && pathListOk(list, budget));
}

function pathListOk(list: unknown, budget: Budget): boolean {
  if (!Array.isArray(list)) return false;
  budget.left -= list.length;
  return budget.left >= 0 && list.every((p) => typeof p === 'string' && pathOk(p, budget));
}

/** At most MAX_PATH_SEGMENTS segments; its numeric segments (indexes) spend the budget's steps. */
function pathOk(path: string, budget: Budget): boolean {
  const segments = path.split('.');
  if (segments.length > MAX_PATH_SEGMENTS) return false;
  for (const seg of segments) if (/^\d+$/.test(seg) && (budget.steps -= Number(seg)) < 0) return false;
  return true;
}
