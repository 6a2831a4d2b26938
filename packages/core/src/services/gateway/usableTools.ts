import { lazyRequire } from '../../lib/lazyRequire.js';
import { selfReference } from '../ai/selfReference.js';
import type { Tool } from './mcpWire.js';

type MetaValidator = ((schema: unknown) => boolean) & {
  errors?: Array<{ keyword: string; instancePath: string; message?: string }> | null;
};
const ajvModule = lazyRequire<{ default: new (options: object) => { getSchema(id: string): MetaValidator | undefined } }>('ajv');
let meta: MetaValidator | undefined;

/**
 * The draft-07 meta-schema's validator (compiled once by Ajv, about 10 µs a schema): what the
 * 1.x MCP SDK client's Ajv (draft-07) reads keyword by keyword. Used instead of compiling each
 * schema, which takes about a millisecond: a list of thousands of tools would hold the event loop
 * for seconds on every connect. A schema's own `$schema` is not followed (2020-12 keywords pass
 * as unknown ones, as that client reads them).
 */
const metaSchema = (): MetaValidator =>
  (meta ??= new (ajvModule().default)({ strict: false, logger: false }).getSchema('http://json-schema.org/draft-07/schema')!);

/** Deeper than any schema a tool needs; validators and JSON.stringify recurse, and overflow the stack a few thousand levels down. */
const MAX_DEPTH = 100;
/** Keywords whose values are data, not schemas. */
const DATA = new Set(['enum', 'const', 'default', 'examples']);
const JSON_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);

/** Verdicts by schema text, kept across listings (bounded): relisting the same tools costs a lookup, not a compile. */
const verdicts = new Map<string, string | null>();
const VERDICTS_MAX = 20_000;

type Node = Record<string, unknown>;

/** Nested deeper than MAX_DEPTH, found without recursion. */
function tooDeep(value: unknown): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    if (depth > MAX_DEPTH) return true;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return false;
}

const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The node a `$ref` names inside `root` (a `#` pointer, or an `$id` / `$anchor` of the schema), or undefined. */
function resolves(root: Node, named: Map<string, Node>, ref: string): boolean {
  if (named.has(ref)) return true;
  const hash = ref.indexOf('#');
  const base = hash === 0 ? root : named.get(hash === -1 ? ref : ref.slice(0, hash));
  if (!base) return false;
  const fragment = hash === -1 ? '' : ref.slice(hash + 1);
  if (fragment === '') return true;
  if (!fragment.startsWith('/')) return named.has(`#${fragment}`);
  let node: unknown = base;
  for (const raw of fragment.slice(1).split('/')) {
    let key: string;
    try {
      key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    } catch {
      return false;
    }
    if (typeof node !== 'object' || node === null || !Object.hasOwn(node, key)) return false;
    node = (node as Node)[key];
  }
  return true;
}

/**
 * What a client that compiles the schema would stumble on, found without compiling it: a `$ref`
 * that names nothing in the schema (dangling, or remote: no client fetches it), a `$ref` loop that never descends into the value, a `type`
 * that is not a JSON type, a
 * pattern that is not a regular expression. Linear in the schema's size.
 */
function structuralProblem(schema: Node): string | null {
  const named = new Map<string, Node>();
  const refs: string[] = [];
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== 'object' || node === null) continue;
    if (isNode(node)) {
      if (typeof node.$id === 'string') named.set(node.$id.replace(/#$/, ''), node);
      if (typeof node.$anchor === 'string') named.set(`#${node.$anchor}`, node);
      if (typeof node.$ref === 'string') refs.push(node.$ref);
      const types = Array.isArray(node.type) ? node.type : node.type === undefined ? [] : [node.type];
      if (types.some((t) => typeof t !== 'string' || !JSON_TYPES.has(t)))
        return `"type" ${JSON.stringify(node.type).slice(0, 60)} is not a JSON type`;
      const patterns = [
        ...(typeof node.pattern === 'string' ? [node.pattern] : []),
        ...(isNode(node.patternProperties) ? Object.keys(node.patternProperties) : []),
      ];
      for (const p of patterns) {
        try {
          new RegExp(p, 'u');
        } catch {
          return `pattern ${JSON.stringify(p.slice(0, 60))} is not a regular expression`;
        }
      }
    }
    for (const [k, v] of Object.entries(node)) if (!DATA.has(k)) stack.push(v);
  }
  const dangling = refs.find((ref) => !resolves(schema, named, ref));
  if (dangling !== undefined) return `$ref ${JSON.stringify(dangling.slice(0, 100))} names nothing in the schema`;
  // A $ref loop that never descends into the value compiles in some validators and overflows the stack in others.
  const loop = selfReference(schema);
  return loop ? `it refers to itself at ${loop.slice(0, 100)}` : null;
}

/** Why a schema cannot be used by a client that compiles it (structural checks, then the meta-schema), or null; verdicts are kept. */
function schemaProblem(schema: unknown): string | null {
  if (!isNode(schema)) return 'not an object';
  // Before the key: JSON.stringify itself overflows the stack on a schema a few thousand levels deep.
  if (tooDeep(schema)) return `nested more than ${MAX_DEPTH} levels deep`;
  const key = JSON.stringify(schema);
  const known = verdicts.get(key);
  if (known !== undefined) return known;
  let problem = structuralProblem(schema);
  if (!problem) {
    const { $schema: _dialect, ...rest } = schema;
    const check = metaSchema();
    // Repeated entries (`required: ["a", "a"]`) compile fine: not a reason to leave a tool out.
    const error = check(rest) ? undefined : check.errors?.find((e) => e.keyword !== 'uniqueItems');
    if (error) problem = `${error.instancePath || '/'} ${error.message ?? 'is not valid'}`.slice(0, 200);
  }
  // Full: start again (a FIFO over a Map's first keys costs more than the checks it saves).
  if (verdicts.size >= VERDICTS_MAX) verdicts.clear();
  verdicts.set(key, problem);
  return problem;
}

/**
 * The tools of an upstream's list that clients can use, and what was left out. An upstream's
 * definitions are untrusted: the 1.x SDK client compiles every listed output schema while it
 * reads `tools/list`, so one schema with a dangling or looping `$ref` made the whole list of
 * this server (ours and every upstream's) fail for it; model APIs refuse a request whose tool
 * parameters are not a valid schema; and a name listed twice makes clients that key tools by
 * name refuse the list. A tool with such a schema is left out, and of two tools with one name
 * the first is kept.
 */
export function usableTools(tools: readonly Tool[]): { tools: Tool[]; dropped: Array<{ name: string; why: string }> } {
  const out: Tool[] = [];
  const dropped: Array<{ name: string; why: string }> = [];
  const names = new Set<string>();
  for (const tool of tools) {
    if (names.has(tool.name)) {
      dropped.push({ name: tool.name, why: 'a second tool with this name' });
      continue;
    }
    const input = schemaProblem(tool.inputSchema);
    const output = !input && tool.outputSchema !== undefined ? schemaProblem(tool.outputSchema) : null;
    if (input || output) {
      dropped.push({ name: tool.name, why: input ? `inputSchema: ${input}` : `outputSchema: ${output}` });
      continue;
    }
    names.add(tool.name);
    out.push(tool);
  }
  return { tools: out, dropped };
}
