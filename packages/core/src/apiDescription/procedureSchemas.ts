import { z } from '../lib/zod.js';
import type { AnyRouter } from '@trpc/server';
import { procedureIndex } from '../pipeline/invoke.js';

type JsonSchema = Record<string, unknown>;

/** One procedure as the API descriptions see it: path, kind, who may call it and its schemas. */
export interface DescribedProcedure {
  path: string;
  type: 'query' | 'mutation';
  description: string | undefined;
  /** 'public' | 'user' | 'admin', from the procedure builder (meta.access). */
  access: 'public' | 'user' | 'admin';
  /** JSON Schema of the input as a caller sends it (defaults make fields optional); undefined: no input. */
  input: JsonSchema | undefined;
  /** Whether a call must send an input: false when the input schema accepts none (optional, default). */
  inputRequired: boolean;
  /** JSON Schema of the declared `.output()`; undefined: not declared. */
  output: JsonSchema | undefined;
}

export type SchemaTarget = 'draft-7' | 'draft-2020-12';

/**
 * Schemas named in zod's registry land in `$defs` with `#/$defs/X` references. Embedded in a
 * larger document those references would point at the document root, so the definitions are
 * lifted into the document's `components.schemas` and the references rewritten there.
 */
function liftDefs(schema: JsonSchema, components: Record<string, JsonSchema>, selfName: string): JsonSchema {
  const defs = (schema.$defs ?? schema.definitions) as Record<string, JsonSchema> | undefined;
  delete schema.$defs;
  delete schema.definitions;
  delete schema.$schema;
  let recursive = false;
  // zod numbers the unnamed definitions it needs (z.lazy) `__schema0`, `__schema1`... per schema:
  // two procedures' would overwrite each other in the shared components, so prefix them.
  const component = (name: string) => (/^__schema\d+$/.test(name) ? `${selfName}${name.slice(1)}` : name);
  const rewrite = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(rewrite);
    if (typeof node !== 'object' || node === null) return node;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') {
        const name = /^#\/(?:\$defs|definitions)\/(.+)$/.exec(v)?.[1];
        // A bare "#" is zod's reference to the schema itself (an unnamed recursive schema). In
        // the document it would name the document's root (a tool that dereferences it never
        // ends), so the schema is also lifted into the components under `selfName`.
        if (!name && v === '#') recursive = true;
        out.$ref = name ? `#/components/schemas/${component(name)}` : v === '#' ? `#/components/schemas/${selfName}` : v;
      } else out[k] = rewrite(v);
    }
    return out;
  };
  if (defs) for (const [name, def] of Object.entries(defs)) components[component(name)] = rewrite(def) as JsonSchema;
  const root = rewrite(schema) as JsonSchema;
  if (recursive) components[selfName] = root;
  return root;
}

function toSchema(
  schema: unknown,
  io: 'input' | 'output',
  target: SchemaTarget,
  components: Record<string, JsonSchema>,
  path: string,
): JsonSchema | undefined {
  if (!(schema instanceof z.ZodType)) return undefined;
  const json = z.toJSONSchema(schema, { io, target, unrepresentable: 'any' }) as JsonSchema;
  return liftDefs(json, components, `${path}.${io}`);
}

/**
 * The JSON Schema cannot say whether the input itself may be left out (an optional object is
 * the object's schema; a required z.number() has no "required" list), so ask zod.
 */
function inputRequired(schema: unknown): boolean {
  if (!(schema instanceof z.ZodType)) return false;
  try {
    return !schema.safeParse(undefined).success;
  } catch {
    return true; // an async refinement: assume the input is needed
  }
}

/**
 * Every query and mutation of a router with its JSON Schemas, sorted by path. Everything is
 * described, whatever the caller may call: the schemas are not secrets and a client needs to
 * know what exists before it signs in; `access` says who may call each one.
 */
export function describeProcedures(
  router: AnyRouter,
  target: SchemaTarget,
): { procedures: DescribedProcedure[]; components: Record<string, JsonSchema> } {
  const components: Record<string, JsonSchema> = {};
  const procedures: DescribedProcedure[] = [];
  for (const info of procedureIndex(router).values()) {
    if (info.type === 'subscription') continue;
    const def = info.procedure._def as { inputs?: unknown[]; output?: unknown };
    procedures.push({
      path: info.path,
      type: info.type,
      description: info.meta?.description,
      access: info.meta?.access ?? 'public',
      input: toSchema(def.inputs?.[0], 'input', target, components, info.path),
      inputRequired: inputRequired(def.inputs?.[0]),
      output: toSchema(def.output, 'output', target, components, info.path),
    });
  }
  procedures.sort((a, b) => a.path.localeCompare(b.path));
  return { procedures, components };
}
