type Schema = Record<string, unknown>;

/** Keywords that apply a subschema to the same value (not to a property or an element of it). */
const IN_PLACE_ONE = ['not', 'if', 'then', 'else'] as const;
const IN_PLACE_MANY = ['allOf', 'anyOf', 'oneOf'] as const;
const IN_PLACE_MAP = ['dependentSchemas', 'dependencies'] as const;

/** Keywords whose values are data (never resolved or applied). */
const DATA = new Set(['enum', 'const', 'default', 'examples']);

const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The node a JSON pointer fragment (`#`, `#/$defs/a`) names inside `root`, or undefined. */
function atPointer(root: Schema, fragment: string): unknown {
  let node: unknown = root;
  if (fragment === '' || fragment === '/') return fragment === '' ? root : undefined;
  for (const raw of fragment.slice(1).split('/')) {
    let key: string;
    try {
      key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    } catch {
      return undefined;
    }
    if (typeof node !== 'object' || node === null || !Object.hasOwn(node, key)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

/**
 * Where a schema refers to itself without looking inside the value first (`{"$ref": "#"}`,
 * two `$defs` that `$ref` each other, an `allOf` holding a `$ref` to its parent): the path of
 * the `$ref` that closes the loop, or null when there is none. Such a schema compiles, but
 * checking any value against it recurses until the stack overflows, so it is refused before a
 * call is made. A `$ref` under `properties`, `items` and the like is fine: each step descends
 * into a smaller part of the value. Resolved here: `#…` pointers into the whole schema and
 * `$id` / `$anchor` names used verbatim, which is how such loops are written.
 */
export function selfReference(root: Schema): string | null {
  const named = new Map<string, Schema>();
  const collect = (node: unknown, seen: Set<object>): void => {
    if (typeof node !== 'object' || node === null || seen.has(node)) return;
    seen.add(node);
    if (isSchema(node)) {
      if (typeof node.$id === 'string') named.set(node.$id.replace(/#$/, ''), node);
      if (typeof node.$anchor === 'string') named.set(`#${node.$anchor}`, node);
    }
    for (const [k, v] of Object.entries(node)) if (!DATA.has(k)) collect(v, seen);
  };
  collect(root, new Set());

  const target = (ref: string): unknown => {
    if (named.has(ref)) return named.get(ref);
    if (ref.startsWith('#')) return atPointer(root, ref.slice(1));
    const hash = ref.indexOf('#');
    const base = named.get(hash === -1 ? ref : ref.slice(0, hash));
    return base && hash !== -1 ? atPointer(base, ref.slice(hash + 1)) : base;
  };

  // Depth-first over in-place edges: a schema met again while still on the path is a loop.
  const onPath = new Set<Schema>();
  const done = new Set<Schema>();
  const visit = (node: Schema, path: string): string | null => {
    if (onPath.has(node)) return path;
    if (done.has(node)) return null;
    onPath.add(node);
    const next: Array<[unknown, string]> = [];
    if (typeof node.$ref === 'string') next.push([target(node.$ref), `${path}/$ref`]);
    for (const k of IN_PLACE_ONE) next.push([node[k], `${path}/${k}`]);
    for (const k of IN_PLACE_MANY)
      if (Array.isArray(node[k])) (node[k] as unknown[]).forEach((s, i) => next.push([s, `${path}/${k}/${i}`]));
    for (const k of IN_PLACE_MAP)
      if (isSchema(node[k])) for (const [name, s] of Object.entries(node[k] as Schema)) next.push([s, `${path}/${k}/${name}`]);
    for (const [child, at] of next) {
      const loop = isSchema(child) ? visit(child, at) : null;
      if (loop) return loop;
    }
    onPath.delete(node);
    done.add(node);
    return null;
  };
  // Every subschema is a possible start: a loop may sit under `properties` or `$defs`.
  const starts: Array<[Schema, string]> = [];
  const gather = (node: unknown, path: string, seen: Set<object>): void => {
    if (typeof node !== 'object' || node === null || seen.has(node)) return;
    seen.add(node);
    if (isSchema(node)) starts.push([node, path]);
    // Values, not schemas: a `default` that looks like `{"$ref": "#"}` refers to nothing.
    for (const [k, v] of Object.entries(node)) if (!DATA.has(k)) gather(v, `${path}/${k}`, seen);
  };
  gather(root, '#', new Set());
  for (const [node, path] of starts) {
    const loop = visit(node, path);
    if (loop) return loop;
  }
  return null;
}
