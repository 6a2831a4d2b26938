import type { Context } from '../../pipeline/context.js';
import { runtimeOf } from '../../pipeline/callContext.js';
import { z } from '../../lib/zod.js';
import type { AnyRouter } from '@trpc/server';
import { invoke, loadedProcedureIndex } from '../../pipeline/invoke.js';
import type { PromptArgumentDefinition, PromptDefinition, PromptMessage, PromptResult } from '../../services/prompts/PromptRegistry.js';
import { isBuiltInPath } from '../../kernel/namespaces.js';

type JsonProp = { type?: string | string[]; description?: string; enum?: unknown[]; examples?: unknown[]; default?: unknown };

/** The object properties of a procedure's zod input, as JSON Schema (computed once). */
function inputProperties(schema: unknown): { props: Record<string, JsonProp>; required: Set<string> } {
  if (!(schema instanceof z.ZodType)) return { props: {}, required: new Set() };
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as {
    properties?: Record<string, JsonProp>;
    required?: string[];
  };
  return { props: json.properties ?? {}, required: new Set(json.required ?? []) };
}

/** Prompt arguments are strings on the wire; turn them back into what the input schema expects. */
function coerce(value: string, prop: JsonProp | undefined): unknown {
  const types = Array.isArray(prop?.type) ? prop.type : [prop?.type];
  if (types.includes('string') || prop?.type === undefined) return value;
  if ((types.includes('number') || types.includes('integer')) && value.trim() !== '' && Number.isFinite(Number(value)))
    return Number(value);
  if (types.includes('boolean') && (value === 'true' || value === 'false')) return value === 'true';
  return value;
}

/** What a prompt procedure returns, turned into MCP prompt messages. */
export function toPromptResult(data: unknown, description?: string): PromptResult {
  const text = (t: string): PromptMessage[] => [{ role: 'user', content: { type: 'text', text: t } }];
  if (typeof data === 'string') return { description, messages: text(data) };
  if (data && typeof data === 'object') {
    const d = data as { messages?: unknown; prompt?: unknown; description?: unknown; resultType?: unknown };
    // An MCP input-required result (the prompt asks the client for input first): the MCP
    // transport hands it to the client as is.
    if (d.resultType === 'input_required') return data as PromptResult;
    if (Array.isArray(d.messages)) {
      return { description: typeof d.description === 'string' ? d.description : description, messages: d.messages as PromptMessage[] };
    }
    if (typeof d.prompt === 'string') return { description, messages: text(d.prompt) };
  }
  return { description, messages: text(JSON.stringify(data ?? null)) };
}

/**
 * Every procedure with `meta.mcp.prompt` becomes a prompt: its input fields are the arguments
 * (required unless optional or defaulted; enums offered by completion), and prompts/get runs
 * the procedure through the invoke seam with the caller's context, so auth and rate limits apply.
 * It reads the procedures built so far: a server builds its registry before the lazy built-in
 * namespaces load, and those carry no prompts (routers/appRouter.test.ts checks).
 */
export function promptsFromRouter(router: AnyRouter): PromptDefinition[] {
  const prompts: PromptDefinition[] = [];
  for (const info of loadedProcedureIndex(router).values()) {
    const meta = info.meta?.mcp;
    if (!meta?.prompt || info.type === 'subscription') continue;
    const opts = meta.prompt === true ? {} : meta.prompt;
    const name = opts.name ?? meta.name ?? info.path.split('.').pop()!;
    // The arguments come from the input's JSON Schema. A built-in prompt's is computed on first
    // use (prompts/list, prompts/get, completion) instead of at start-up: our schemas are known
    // to convert. A custom router's is computed now, so one zod cannot convert (two schemas
    // sharing a meta id, say) still fails start-up, not the first prompts/list.
    const schema = (info.procedure._def as { inputs?: unknown[] }).inputs?.[0];
    let converted: { props: Record<string, JsonProp>; args: PromptArgumentDefinition[] } | undefined;
    const fromInput = () => {
      if (converted) return converted;
      const { props, required } = inputProperties(schema);
      const args: PromptArgumentDefinition[] = Object.entries(props).map(([argName, p]) => ({
        name: argName,
        ...(p.description ? { description: p.description } : {}),
        required: required.has(argName) && p.default === undefined,
        ...(Array.isArray(p.enum) && p.enum.every((v) => typeof v === 'string') ? { values: p.enum as string[] } : {}),
        // `.meta({ examples: [...] })` on a field: suggestions for completion, not a restriction.
        ...(Array.isArray(p.examples) && p.examples.every((v) => typeof v === 'string') ? { suggestions: p.examples as string[] } : {}),
      }));
      return (converted = { props, args });
    };
    if (!isBuiltInPath(info.path)) fromInput();
    const description = opts.description ?? info.meta?.description;
    const path = info.path;
    prompts.push({
      name,
      ...(opts.title ? { title: opts.title } : {}),
      ...(description ? { description } : {}),
      get arguments() {
        return fromInput().args;
      },
      ...(info.meta?.access ? { requiresIdentity: true } : {}),
      procedure: path,
      async get(values, callCtx) {
        // The registry hands back, untyped, the Context the pipeline gave it.
        const ctx = callCtx as Context;
        const input: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(values)) input[k] = coerce(v, fromInput().props[k]);
        const result = await invoke(runtimeOf(ctx).router, path, input, ctx);
        // The MCP layer maps the tRPC error code to a JSON-RPC error (BAD_REQUEST → -32602).
        if (!result.ok) throw result.error;
        return toPromptResult(result.data, description);
      },
    });
  }
  return prompts;
}
