import { z } from 'zod';
import {
  isBuiltInPath,
  isRouterLoaded,
  keyMayCall,
  loadedProcedureIndex,
  procedureIndex,
  type Identity,
  type ProcedureInfo,
  type ProcedureMeta,
  type ToolAnnotations,
} from '@ai-backend/core/internal';
import type { AnyRouter } from '@trpc/server';
import { LAZY_BUILTIN_TOOLS } from './lazyBuiltinTools.js';

export interface CatalogTool {
  name: string;
  path: string;
  description: string;
  inputSchema: Record<string, unknown>;
  /**
   * Whether `x-mcp-header` appears anywhere in inputSchema (SEP-2243 headers mirroring
   * arguments). Only then does a 2026-07-28 tools/call need the SDK's walk of the schema.
   */
  declaresHeaders: boolean;
  outputSchema?: Record<string, unknown>;
  annotations?: ToolAnnotations;
  meta: ProcedureMeta | undefined;
}

export interface ToolCatalog {
  tools: CatalogTool[];
  byName: Map<string, CatalogTool>;
  /** The tools/list result, built once. */
  listResult: { tools: Array<Record<string, unknown>> };
}

const EMPTY_OBJECT_SCHEMA = { type: 'object', properties: {} } as const;

/** JSON Schema of a zod input; MCP requires an object schema at the top. */
function toInputSchema(schema: unknown): Record<string, unknown> {
  if (!(schema instanceof z.ZodType)) return { ...EMPTY_OBJECT_SCHEMA };
  // $schema stays: it names the 2020-12 dialect that $defs/$ref use (SEP-1613).
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete json.default; // a default for the whole input object is not useful to clients
  if (json.type === 'object') return json;
  // A nullable object or a union of objects (z.discriminatedUnion) is still an object to a
  // client: its alternatives stay (MCP wants `type: 'object'` at the root; anyOf beside it is
  // plain JSON Schema). Anything else has no object shape to show.
  const { $schema, $defs, anyOf: _a, oneOf: _o, ...rest } = json;
  const members = objectAlternatives(json);
  if (!members?.length || Object.keys(rest).length > 0) return { ...EMPTY_OBJECT_SCHEMA };
  const top = { ...($schema ? { $schema } : {}), ...($defs ? { $defs } : {}) };
  return members.length === 1 ? { ...top, ...members[0] } : { ...top, type: 'object', anyOf: members };
}

/** The object schemas a schema allows (its anyOf/oneOf branches, `null` left out), or undefined when it allows anything else. */
function objectAlternatives(node: unknown): Array<Record<string, unknown>> | undefined {
  if (typeof node !== 'object' || node === null) return undefined;
  const n = node as Record<string, unknown>;
  if (n.type === 'object') return [n];
  if (n.type === 'null') return [];
  const branches = n.anyOf ?? n.oneOf;
  if (!Array.isArray(branches)) return undefined;
  const out: Array<Record<string, unknown>> = [];
  for (const b of branches) {
    const objects = objectAlternatives(b);
    if (!objects) return undefined;
    out.push(...objects);
  }
  return out;
}

function toOutputSchema(schema: unknown): Record<string, unknown> | undefined {
  if (!(schema instanceof z.ZodType)) return undefined;
  const json = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as Record<string, unknown>;
  delete json.$schema;
  return json.type === 'object' ? json : undefined;
}

/** The tool name a procedure publishes under, or undefined when it is not a tool. */
function toolNameOf(info: ProcedureInfo): string | undefined {
  if (!info.meta?.mcp || info.meta.mcp.tool === false || info.type === 'subscription') return undefined;
  return info.meta.mcp.name ?? info.path.split('.').pop()!;
}

/** The clash names a built-in procedure first, whichever namespace was built first. */
function clashError(name: string, a: string, b: string): Error {
  const [first, second] = isBuiltInPath(b) && !isBuiltInPath(a) ? [b, a] : [a, b];
  return new Error(`MCP tool name "${name}" is used by both ${first} and ${second}; set meta.mcp.name`);
}

/** Tool names the MCP gateway answers for on /mcp: its tool search's two tools (upstream tools are `<server>__<tool>`). */
const GATEWAY_TOOL_NAMES: ReadonlySet<string> = new Set(['search_tools', 'call_tool']);

/**
 * Why a procedure may not publish `name`, or undefined. Upstream MCP servers' tools are
 * `<server>__<tool>` and the gateway's tool search is search_tools / call_tool
 * (docs/mcp-gateway.md): one of ours named so would be listed beside the upstream's tool of that
 * name and take its calls (ours are looked up first), and an API key's `<server>__*` rule would
 * reach it. Servers can be added at run time, so the names are reserved whether any is configured or not.
 */
function reservedNameError(name: string, path: string): Error | undefined {
  if (name.includes('__'))
    return new Error(
      `MCP tool name "${name}" of ${path} contains "__", which names upstream MCP servers' tools (<server>__<tool>); set meta.mcp.name`,
    );
  if (GATEWAY_TOOL_NAMES.has(name))
    return new Error(`MCP tool name "${name}" of ${path} is the MCP gateway's tool search tool; set meta.mcp.name`);
  return undefined;
}

/**
 * Tool name → procedure, refusing two procedures of one name and names the gateway answers for. `known` are names taken by
 * procedures not among `infos` (name → path).
 */
function toolsByName(infos: Iterable<ProcedureInfo>, known: Readonly<Record<string, string>> = {}): Map<string, ProcedureInfo> {
  const paths = new Map(Object.entries(known));
  const byName = new Map<string, ProcedureInfo>();
  for (const info of infos) {
    const name = toolNameOf(info);
    if (name === undefined) continue;
    const clash = paths.get(name);
    if (clash !== undefined) throw clashError(name, clash, info.path);
    const reserved = reservedNameError(name, info.path);
    if (reserved) throw reserved;
    paths.set(name, info.path);
    byName.set(name, info);
  }
  return byName;
}

/** Tool name → procedure, without schemas, for a loaded router. */
export function toolProcedures(router: AnyRouter): Map<string, ProcedureInfo> {
  return toolsByName(procedureIndex(router).values());
}

/**
 * The start-up check that no two procedures publish one tool name, so a clash stops the server
 * before it listens even though the MCP layer and the lazy built-in namespaces load on first use.
 * The lazy namespaces' tool names come from LAZY_BUILTIN_TOOLS instead of building them.
 */
export function checkToolNames(router: AnyRouter): void {
  toolsByName(loadedProcedureIndex(router).values(), isRouterLoaded(router) ? {} : LAZY_BUILTIN_TOOLS);
}

/**
 * Every procedure with `meta.mcp` becomes a tool. Schemas are computed here, once when the MCP
 * layer loads, never per request. Tool names default to the last path segment (toolProcedures).
 */
export function buildToolCatalog(router: AnyRouter): ToolCatalog {
  const byName = new Map<string, CatalogTool>();
  for (const [name, info] of toolProcedures(router)) {
    const def = info.procedure._def as { inputs?: unknown[]; output?: unknown };
    const inputSchema = toInputSchema(def.inputs?.[0]);
    byName.set(name, {
      name,
      path: info.path,
      description: info.meta?.description ?? info.path,
      inputSchema,
      declaresHeaders: JSON.stringify(inputSchema).includes('"x-mcp-header"'),
      outputSchema: toOutputSchema(def.output),
      annotations: info.meta?.mcp?.annotations,
      meta: info.meta,
    });
  }
  const tools = [...byName.values()];
  return {
    tools,
    byName,
    listResult: {
      tools: tools.map((t) => ({
        name: t.name,
        description: t.description,
        inputSchema: t.inputSchema,
        ...(t.outputSchema ? { outputSchema: t.outputSchema } : {}),
        ...(t.annotations ? { annotations: t.annotations } : {}),
      })),
    },
  };
}

/**
 * The catalog's tools/list answer for one caller: the whole list, or for an API key only the tools
 * its rules let it call (keyAccess, its scopes, its tools rule), so an assistant is not offered
 * tools that would answer 403. A call is still decided on its own.
 */
export function toolsListFor(catalog: ToolCatalog, identity: Identity | null): { tools: Array<Record<string, unknown>> } {
  if (identity?.via !== 'apiKey') return catalog.listResult;
  return { tools: catalog.listResult.tools.filter((_, i) => keyMayCall(catalog.tools[i]!.path, catalog.tools[i]!.meta, identity)) };
}
