import { CoreError, modelInputFields, type ChatMessage, type ResolvedConfig } from '@ai-backend/core/internal';
import { assertModelField, cacheDirective, PROVIDER_KEY_HEADER } from '../openai/toChatInput.js';

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | undefined => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : undefined);
const bad = (message: string, param?: string) =>
  new CoreError('INVALID_PARAMS', message, { details: { reason: 'invalid_request', ...(param ? { param } : {}) } });

/** What /v1/messages hands to ai.generateText / ai.streamText, plus how to answer. */
export interface MessagesRequest {
  input: Record<string, unknown>;
  /** The `model` string as the client sent it (echoed in the answer). */
  model: string;
  stream: boolean;
}

/**
 * The `model` field → the procedures' provider + options.model, or a model reference for a named
 * provider or a route (core's modelInputFields). `bareProvider`: the provider of a bare model id
 * that no configured provider lists (on /v1/messages, `claude-…` is Anthropic's, so Claude Code
 * works unchanged with ids newer than the registry).
 */
export function modelFields(
  config: ResolvedConfig,
  ref: string,
  bareProvider?: string,
): { input: Record<string, unknown>; options: Record<string, unknown> } {
  return modelInputFields(config, ref, bareProvider === undefined ? {} : { bareProvider });
}

function blocks(content: unknown, param: string): Json[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (!Array.isArray(content)) throw bad(`${param} must be a string or an array of content blocks`, param);
  return content.map(
    (b, i) =>
      obj(b) ??
      (() => {
        throw bad(`${param}[${i}] must be a content block object`, `${param}[${i}]`);
      })(),
  );
}

/** Anthropic's `system`: a string or text blocks. */
function systemText(system: unknown): string | undefined {
  if (system === undefined || system === null) return undefined;
  if (typeof system === 'string') return system;
  return blocks(system, 'system')
    .map((b, i) => {
      if (b.type !== 'text' || typeof b.text !== 'string') throw bad(`system[${i}] must be a text block`, `system[${i}]`);
      return b.text;
    })
    .join('\n\n');
}

function mediaPart(
  b: Json,
  param: string,
): { type: 'image'; image: string; mediaType?: string } | { type: 'file'; data: string; mediaType: string } {
  const src = obj(b.source);
  if (src?.type === 'base64' && typeof src.data === 'string' && typeof src.media_type === 'string') {
    return b.type === 'image'
      ? { type: 'image', image: src.data, mediaType: src.media_type }
      : { type: 'file', data: src.data, mediaType: src.media_type };
  }
  if (src?.type === 'url' && typeof src.url === 'string')
    return b.type === 'image' ? { type: 'image', image: src.url } : { type: 'file', data: src.url, mediaType: 'application/pdf' };
  throw bad(`${param}.source must be { type: 'base64', media_type, data } or { type: 'url', url }`, `${param}.source`);
}

function toolResultOutput(content: unknown): unknown {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((c) => (obj(c)?.type === 'text' ? (obj(c)!.text as string) : '')).join('');
  return content;
}

/**
 * An Anthropic Messages request → the input of ai.generateText / ai.streamText. Only the shape
 * is translated; limits, models, prompts and the payer are the procedure's own rules.
 */
export function toMessagesInput(body: unknown, headers: Headers, config: ResolvedConfig): MessagesRequest {
  const b = obj(body);
  if (!b) throw bad('the body must be a JSON object');
  assertModelField(b.model, 'model: Field required (provider/model or a configured alias)', bad);
  if (typeof b.max_tokens !== 'number' || !Number.isInteger(b.max_tokens) || b.max_tokens < 1)
    throw bad('max_tokens: Field required (a positive integer)', 'max_tokens');
  if (!Array.isArray(b.messages) || b.messages.length === 0) throw bad('messages: must be a non-empty array', 'messages');
  if (b.stream !== undefined && b.stream !== null && typeof b.stream !== 'boolean') throw bad('stream: must be a boolean', 'stream');
  if (b.tools !== undefined && b.tools !== null && !Array.isArray(b.tools)) throw bad('tools: must be an array', 'tools');

  const toolNames = new Map<string, string>();
  const messages: ChatMessage[] = [];
  b.messages.forEach((raw, i) => {
    const m = obj(raw) ?? {};
    const param = `messages.${i}`;
    const parts = blocks(m.content, `${param}.content`);
    if (m.role === 'assistant') {
      const content = parts
        .map((p, j) => {
          if (p.type === 'text' && typeof p.text === 'string') return { type: 'text' as const, text: p.text };
          if (p.type === 'tool_use' && typeof p.id === 'string' && typeof p.name === 'string') {
            toolNames.set(p.id, p.name);
            return { type: 'tool-call' as const, toolCallId: p.id, toolName: p.name, input: p.input ?? {} };
          }
          if (p.type === 'thinking' || p.type === 'redacted_thinking') return undefined;
          throw bad(`${param}.content.${j}: assistant blocks are text and tool_use`, `${param}.content.${j}`);
        })
        .filter((p) => p !== undefined);
      messages.push({ role: 'assistant', content });
      return;
    }
    if (m.role !== 'user')
      throw bad(`${param}.role: must be user or assistant (system goes in the top-level system field)`, `${param}.role`);
    const results = parts.filter((p) => p.type === 'tool_result');
    if (results.length > 0) {
      messages.push({
        role: 'tool',
        content: results.map((p) => {
          const id = String(p.tool_use_id ?? '');
          return {
            type: 'tool-result' as const,
            toolCallId: id,
            toolName: toolNames.get(id) ?? 'unknown',
            output: toolResultOutput(p.content),
            ...(p.is_error === true ? { isError: true } : {}),
          };
        }),
      });
    }
    const rest = parts.filter((p) => p.type !== 'tool_result');
    if (rest.length === 0) return;
    messages.push({
      role: 'user',
      content: rest.map((p, j) => {
        if (p.type === 'text' && typeof p.text === 'string') return { type: 'text' as const, text: p.text };
        if (p.type === 'image' || p.type === 'document') return mediaPart(p, `${param}.content.${j}`);
        throw bad(`${param}.content.${j}: user blocks are text, image, document and tool_result`, `${param}.content.${j}`);
      }),
    });
  });

  const { input, options } = modelFields(config, b.model, 'anthropic');
  input.messages = messages;
  const system = systemText(b.system);
  if (system !== undefined) input.systemPrompt = system;
  options.maxTokens = b.max_tokens;
  // Fields that change the answer are checked, not dropped: Anthropic refuses them as well.
  if (b.temperature !== undefined && b.temperature !== null && typeof b.temperature !== 'number')
    throw bad('temperature: must be a number', 'temperature');
  if (typeof b.temperature === 'number') options.temperature = b.temperature;
  if (b.top_p !== undefined && b.top_p !== null) options.topP = b.top_p;
  if (b.stop_sequences !== undefined && b.stop_sequences !== null) options.stopSequences = b.stop_sequences;
  input.options = options;
  if (Array.isArray(b.tools) && b.tools.length > 0) {
    input.tools = b.tools.map((t, i) => {
      const tool = obj(t);
      // Server tools (web_search_…, code_execution_…) run at Anthropic; no other provider has them.
      if (tool?.type !== undefined && tool.type !== 'custom')
        throw bad(`tools.${i}: only custom tools (name, input_schema) are supported, not ${String(tool.type).slice(0, 60)}`, `tools.${i}`);
      if (!tool || typeof tool.name !== 'string' || !obj(tool.input_schema))
        throw bad(`tools.${i}: a custom tool needs name and input_schema (a JSON Schema object)`, `tools.${i}`);
      return {
        name: tool.name,
        ...(typeof tool.description === 'string' ? { description: tool.description } : {}),
        parameters: obj(tool.input_schema)!,
      };
    });
  }
  const tc = obj(b.tool_choice);
  if (
    b.tool_choice !== undefined &&
    b.tool_choice !== null &&
    !(tc && (['auto', 'none', 'any'].includes(tc.type as string) || (tc.type === 'tool' && typeof tc.name === 'string')))
  )
    throw bad("tool_choice: must be { type: 'auto' | 'any' | 'none' } or { type: 'tool', name }", 'tool_choice');
  if (tc?.type === 'auto' || tc?.type === 'none') input.toolChoice = tc.type;
  else if (tc?.type === 'any') input.toolChoice = 'required';
  else if (tc?.type === 'tool') input.toolChoice = { type: 'tool', toolName: tc.name };
  const cache = cacheDirective(headers);
  if (cache) input.cache = cache;
  const key = headers.get(PROVIDER_KEY_HEADER);
  if (key) input.apiKey = key;
  const user = obj(b.metadata)?.user_id;
  if (typeof user === 'string') input.metadata = { name: user.slice(0, 200), type: 'anthropic-messages' };
  return { input, model: b.model, stream: b.stream === true };
}

/**
 * /v1/messages/count_tokens: the request's input tokens, estimated as the server's metering does
 * before a call (UTF-8 bytes of every text, tool definition and block, over 4; each image or
 * document 2,000 tokens as in the reservation). Providers' tokenizers differ, so this is an
 * estimate for budgeting, not the count a provider will bill.
 */
export function countTokens(body: unknown, config: ResolvedConfig): number {
  const req = toMessagesInput(body, new Headers(), config);
  const enc = new TextEncoder();
  let bytes = enc.encode((req.input.systemPrompt as string | undefined) ?? '').length;
  let attachments = 0;
  for (const m of req.input.messages as ChatMessage[]) {
    if (typeof m.content === 'string') bytes += enc.encode(m.content).length;
    else
      for (const p of m.content as Array<Record<string, unknown>>) {
        if (p.type === 'image' || p.type === 'file') attachments++;
        else bytes += enc.encode(typeof p.text === 'string' ? p.text : JSON.stringify(p)).length;
      }
  }
  if (req.input.tools) bytes += enc.encode(JSON.stringify(req.input.tools)).length;
  return Math.ceil(bytes / 4) + attachments * 2000;
}
