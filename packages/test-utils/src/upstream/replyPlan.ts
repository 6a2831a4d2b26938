import type { WireFormat } from './wireFormats.js';

/**
 * What a generation request asks for beyond plain text, read out of any of the wire formats:
 * tool definitions, returned tool results, a JSON schema for structured output, attachments
 * (image / file parts) and whether the reply should stream.
 */
export interface RequestExtras {
  stream: boolean;
  /** Tools offered to the model (provider-executed structured-output tools excluded). */
  tools: Array<{ name: string; schema: Record<string, unknown> }>;
  /** The conversation already carries a tool result: answer in text. */
  hasToolResult: boolean;
  /** A JSON schema the reply must match (response_format, text.format, output_config, responseSchema, or Anthropic's `json` tool). */
  jsonSchema?: Record<string, unknown>;
  /** Anthropic's structured output through a forced `json` tool. */
  jsonTool: boolean;
  /** Image and file parts in the request. */
  attachments: number;
  /**
   * The request's tool choice as every provider honours it: `none` answers in text though tools
   * are offered; a named tool is the one called (else the first tool).
   */
  toolChoice?: 'none' | { name: string };
  /**
   * The request's stop sequences (Anthropic `stop_sequences`, OpenAI Chat `stop`, Google
   * `generationConfig.stopSequences`, Bedrock `inferenceConfig.stopSequences`; the Responses API
   * has none): a text reply stops before the first of them it contains.
   */
  stopSequences: string[];
}

/**
 * What the test upstream answers. A text reply that reached one of the request's stop sequences
 * ends before it (the sequence is not part of the text, as with every provider) and names it.
 */
export type ReplyContent =
  | { kind: 'text'; text: string; stopSequence?: string }
  | { kind: 'tool'; id: string; name: string; input: Record<string, unknown> };

type Json = Record<string, unknown>;
const arr = (v: unknown): Json[] => (Array.isArray(v) ? (v as Json[]) : []);
const obj = (v: unknown): Json | undefined => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : undefined);

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string' && s !== '') : []);

const ATTACHMENT_TYPES = new Set(['image_url', 'file', 'input_image', 'input_file', 'image', 'document']);

function countParts(contents: unknown[]): { attachments: number; toolResults: number } {
  let attachments = 0;
  let toolResults = 0;
  for (const c of contents) {
    for (const p of arr(c)) {
      if (typeof p.type === 'string' && ATTACHMENT_TYPES.has(p.type)) attachments++;
      if (p.type === 'tool_result') toolResults++;
      if (p.inlineData || p.fileData) attachments++;
      if (p.functionResponse) toolResults++;
    }
  }
  return { attachments, toolResults };
}

export function parseRequestExtras(format: WireFormat, body: Json, path: string): RequestExtras {
  const out: RequestExtras = {
    stream: body.stream === true,
    tools: [],
    hasToolResult: false,
    jsonTool: false,
    attachments: 0,
    stopSequences: [],
  };
  switch (format) {
    case 'openai-chat':
    case 'openrouter':
    case 'mistral': {
      const messages = arr(body.messages);
      for (const t of arr(body.tools)) {
        const f = obj(t.function);
        if (f && typeof f.name === 'string') out.tools.push({ name: f.name, schema: obj(f.parameters) ?? {} });
      }
      out.hasToolResult = messages.some((m) => m.role === 'tool');
      if (body.tool_choice === 'none') out.toolChoice = 'none';
      else if (typeof obj(obj(body.tool_choice)?.function)?.name === 'string')
        out.toolChoice = { name: obj(obj(body.tool_choice)!.function)!.name as string };
      const rf = obj(body.response_format);
      if (rf?.type === 'json_schema') out.jsonSchema = obj(obj(rf.json_schema)?.schema) ?? {};
      else if (rf?.type === 'json_object') out.jsonSchema = {};
      out.attachments = countParts(messages.map((m) => m.content)).attachments;
      out.stopSequences = typeof body.stop === 'string' ? [body.stop] : strings(body.stop);
      break;
    }
    case 'openai-responses': {
      const input = arr(body.input);
      for (const t of arr(body.tools))
        if (t.type === 'function' && typeof t.name === 'string') out.tools.push({ name: t.name, schema: obj(t.parameters) ?? {} });
      out.hasToolResult = input.some((i) => i.type === 'function_call_output');
      if (body.tool_choice === 'none') out.toolChoice = 'none';
      else if (obj(body.tool_choice)?.type === 'function' && typeof obj(body.tool_choice)!.name === 'string')
        out.toolChoice = { name: obj(body.tool_choice)!.name as string };
      const f = obj(obj(body.text)?.format);
      if (f?.type === 'json_schema') out.jsonSchema = obj(f.schema) ?? {};
      else if (f?.type === 'json_object') out.jsonSchema = {};
      out.attachments = countParts(input.map((m) => m.content)).attachments;
      break;
    }
    case 'anthropic': {
      const messages = arr(body.messages);
      for (const t of arr(body.tools)) if (typeof t.name === 'string') out.tools.push({ name: t.name, schema: obj(t.input_schema) ?? {} });
      const forced = obj(body.tool_choice);
      const jsonTool = forced?.type === 'tool' ? out.tools.find((t) => t.name === forced.name && t.name === 'json') : undefined;
      if (jsonTool) {
        out.jsonTool = true;
        out.jsonSchema = jsonTool.schema;
        out.tools = out.tools.filter((t) => t !== jsonTool);
      } else if (forced?.type === 'none') out.toolChoice = 'none';
      else if (forced?.type === 'tool' && typeof forced.name === 'string') out.toolChoice = { name: forced.name };
      const format = obj(obj(body.output_config)?.format) ?? obj(body.output_format);
      if (format?.type === 'json_schema') out.jsonSchema = obj(format.schema) ?? {};
      const counted = countParts(messages.map((m) => m.content));
      out.hasToolResult = counted.toolResults > 0;
      out.attachments = counted.attachments;
      out.stopSequences = strings(body.stop_sequences);
      break;
    }
    case 'bedrock': {
      out.stream = path.endsWith('/converse-stream');
      for (const t of arr(obj(body.toolConfig)?.tools)) {
        const spec = obj(t.toolSpec);
        if (spec && typeof spec.name === 'string') out.tools.push({ name: spec.name, schema: obj(obj(spec.inputSchema)?.json) ?? {} });
      }
      const messages = arr(body.messages);
      out.hasToolResult = messages.some((m) => arr(m.content).some((c) => c.toolResult !== undefined));
      out.stopSequences = strings(obj(body.inferenceConfig)?.stopSequences);
      break;
    }
    case 'google': {
      out.stream = path.endsWith(':streamGenerateContent');
      for (const t of arr(body.tools)) {
        for (const d of arr(t.functionDeclarations))
          if (typeof d.name === 'string') out.tools.push({ name: d.name, schema: obj(d.parameters) ?? obj(d.parametersJsonSchema) ?? {} });
      }
      const calling = obj(obj(body.toolConfig)?.functionCallingConfig);
      const allowed = Array.isArray(calling?.allowedFunctionNames) ? (calling.allowedFunctionNames as unknown[]) : [];
      if (calling?.mode === 'NONE') out.toolChoice = 'none';
      else if (calling?.mode === 'ANY' && allowed.length === 1 && typeof allowed[0] === 'string') out.toolChoice = { name: allowed[0] };
      const gc = obj(body.generationConfig) ?? {};
      out.stopSequences = strings(gc.stopSequences);
      if (gc.responseMimeType === 'application/json') out.jsonSchema = obj(gc.responseSchema) ?? obj(gc.responseJsonSchema) ?? {};
      const counted = countParts(arr(body.contents).map((c) => c.parts));
      out.hasToolResult = counted.toolResults > 0;
      out.attachments = counted.attachments;
      break;
    }
  }
  return out;
}

/** A value matching a JSON schema: the first enum value, 'test' for strings, 1 for numbers, every property of an object. */
export function sampleFromSchema(schema: Json | undefined): unknown {
  if (!schema) return {};
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string':
      return 'test';
    case 'number':
    case 'integer':
      return 1;
    case 'boolean':
      return true;
    case 'array':
      return [sampleFromSchema(obj(schema.items))];
    case 'null':
      return null;
    default: {
      const props = obj(schema.properties) ?? {};
      return Object.fromEntries(Object.entries(props).map(([k, v]) => [k, sampleFromSchema(obj(v))]));
    }
  }
}

let calls = 0;

/**
 * Deterministic behaviour: with tools offered and no tool result yet, call the first tool with
 * arguments sampled from its schema; with a JSON schema, answer a JSON text matching it;
 * otherwise the plain text reply. A text reply is cut before the first stop sequence it contains.
 */
export function planReply(extras: RequestExtras, text: string): ReplyContent {
  if (extras.tools.length > 0 && !extras.hasToolResult && extras.toolChoice !== 'none') {
    const named = typeof extras.toolChoice === 'object' ? extras.toolChoice.name : undefined;
    const tool = extras.tools.find((t) => t.name === named) ?? extras.tools[0]!;
    return {
      kind: 'tool',
      id: `call_test${(++calls).toString(36)}`,
      name: tool.name,
      input: sampleFromSchema(tool.schema) as Record<string, unknown>,
    };
  }
  if (extras.jsonSchema) {
    const value = JSON.stringify(sampleFromSchema(extras.jsonSchema));
    if (extras.jsonTool)
      return { kind: 'tool', id: `call_test${(++calls).toString(36)}`, name: 'json', input: JSON.parse(value) as Record<string, unknown> };
    return stopAt(value, extras.stopSequences);
  }
  return stopAt(extras.hasToolResult ? `${text} [tool result received]` : text, extras.stopSequences);
}

/** A text reply as a model that honours stop sequences gives it: up to the earliest match, which it names. */
function stopAt(text: string, sequences: readonly string[]): ReplyContent {
  let at = -1;
  let matched: string | undefined;
  for (const s of sequences) {
    const i = text.indexOf(s);
    if (i >= 0 && (at < 0 || i < at)) [at, matched] = [i, s];
  }
  return matched === undefined ? { kind: 'text', text } : { kind: 'text', text: text.slice(0, at), stopSequence: matched };
}
