import { CoreError, modelInputFields, type ChatMessage, type ResolvedConfig } from '@ai-backend/core/internal';
import { assertModelField, cacheDirective, PROVIDER_KEY_HEADER, toolSchema } from './toChatInput.js';

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | undefined => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : undefined);
/** A part of an assistant message given as parts (text, tool-call). */
type AssistantPart = Exclude<Extract<ChatMessage, { role: 'assistant' }>['content'], string>[number];
const bad = (message: string, param?: string) =>
  new CoreError('INVALID_PARAMS', message, { details: { reason: 'invalid_request', ...(param ? { param } : {}) } });

/** What /v1/responses hands to ai.generateText / ai.streamText, plus how to answer. */
export interface ResponsesRequest {
  input: Record<string, unknown>;
  model: string;
  stream: boolean;
  /** Echoed in the response object, as OpenAI does. */
  instructions: string | null;
  /** The structured output's format name when `text.format` asked for a JSON schema. */
  json: boolean;
}

function textOf(content: unknown, param: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw bad(`${param} must be a string or an array of content parts`, param);
  return content.map((p) => (typeof obj(p)?.text === 'string' ? (obj(p)!.text as string) : '')).join('');
}

function userContent(content: unknown, param: string): ChatMessage & { role: 'user' } {
  if (typeof content === 'string') return { role: 'user', content };
  if (!Array.isArray(content)) throw bad(`${param} must be a string or an array of content parts`, param);
  return {
    role: 'user',
    content: content.map((raw, i) => {
      const p = obj(raw) ?? {};
      if (p.type === 'input_text' && typeof p.text === 'string') return { type: 'text' as const, text: p.text };
      if (p.type === 'input_image' && typeof p.image_url === 'string') return { type: 'image' as const, image: p.image_url };
      if (p.type === 'input_file' && typeof p.file_data === 'string') {
        const mediaType = /^data:([^;,]+)/.exec(p.file_data)?.[1] ?? 'application/pdf';
        return { type: 'file' as const, data: p.file_data, mediaType, ...(typeof p.filename === 'string' ? { filename: p.filename } : {}) };
      }
      throw bad(`${param}[${i}]: supported parts are input_text, input_image (image_url) and input_file (file_data)`, `${param}[${i}]`);
    }),
  };
}

/**
 * An OpenAI Responses API request → the input of ai.generateText / ai.streamText. Stateless:
 * `previous_response_id` and stored conversations are refused (the server keeps no responses);
 * send the whole conversation in `input`.
 */
export function toResponsesInput(body: unknown, headers: Headers, config: ResolvedConfig): ResponsesRequest {
  const b = obj(body);
  if (!b) throw bad('the body must be a JSON object');
  assertModelField(b.model, 'model is required: provider/model or a configured alias', bad);
  if (b.previous_response_id !== undefined && b.previous_response_id !== null)
    throw bad(
      'previous_response_id is not supported: this server stores no responses; send the whole conversation in input',
      'previous_response_id',
    );
  if (b.conversation !== undefined && b.conversation !== null)
    throw bad('conversation is not supported: send the whole conversation in input', 'conversation');
  if (b.stream !== undefined && b.stream !== null && typeof b.stream !== 'boolean') throw bad('stream must be a boolean', 'stream');
  if (b.tools !== undefined && b.tools !== null && !Array.isArray(b.tools)) throw bad('tools must be an array of function tools', 'tools');
  if (b.instructions !== undefined && b.instructions !== null && typeof b.instructions !== 'string')
    throw bad('instructions must be a string', 'instructions');
  // Fields that change the answer are checked, not dropped (as on /v1/chat/completions): a
  // `temperature: "0"` or a `text.format` without its schema must not quietly get another answer.
  const mot = b.max_output_tokens;
  if (mot !== undefined && mot !== null && !(Number.isInteger(mot) && (mot as number) >= 1))
    throw bad('max_output_tokens must be a positive integer', 'max_output_tokens');
  if (b.temperature !== undefined && b.temperature !== null && typeof b.temperature !== 'number')
    throw bad('temperature must be a number', 'temperature');
  const tcIn = b.tool_choice;
  if (
    tcIn !== undefined &&
    tcIn !== null &&
    tcIn !== 'auto' &&
    tcIn !== 'none' &&
    tcIn !== 'required' &&
    !(obj(tcIn)?.type === 'function' && typeof obj(tcIn)!.name === 'string')
  )
    throw bad("tool_choice must be 'auto', 'none', 'required' or { type: 'function', name }", 'tool_choice');
  if (b.text !== undefined && b.text !== null && !obj(b.text)) throw bad('text must be an object', 'text');
  const formatIn = obj(b.text)?.format;
  if (formatIn !== undefined && formatIn !== null) {
    const f = obj(formatIn);
    if (!f || !['text', 'json_schema', 'json_object'].includes(f.type as string))
      throw bad("text.format.type must be 'text', 'json_schema' or 'json_object'", 'text.format');
    if (f.type === 'json_schema' && !obj(f.schema)) throw bad('text.format.schema must be a JSON Schema object', 'text.format.schema');
  }

  const items: unknown[] = typeof b.input === 'string' ? [{ role: 'user', content: b.input }] : Array.isArray(b.input) ? b.input : [];
  if (items.length === 0) throw bad('input must be a non-empty string or array', 'input');
  const toolNames = new Map<string, string>();
  const messages: ChatMessage[] = [];
  const system: string[] = [];
  /**
   * The Responses API lists a turn's parts as separate items (an assistant message, then one
   * `function_call` item per parallel call, then one `function_call_output` each); chat formats
   * carry a turn as one message. A call joins the assistant turn just before it (its text and
   * earlier calls), and consecutive outputs form one tool message: OpenAI Chat refuses an
   * assistant message whose tool calls are not all answered right after it, which split calls
   * would be.
   */
  const assistantTurn = (): AssistantPart[] => {
    const last = messages.at(-1);
    if (last?.role === 'assistant') {
      if (typeof last.content === 'string') last.content = last.content ? [{ type: 'text', text: last.content }] : [];
      return last.content;
    }
    const content: AssistantPart[] = [];
    messages.push({ role: 'assistant', content });
    return content;
  };
  items.forEach((raw, i) => {
    const it = obj(raw) ?? {};
    const param = `input[${i}]`;
    if (it.type === 'function_call') {
      const id = String(it.call_id ?? '');
      toolNames.set(id, String(it.name ?? ''));
      let args: unknown = {};
      try {
        args = typeof it.arguments === 'string' && it.arguments ? JSON.parse(it.arguments) : {};
      } catch {
        throw bad(`${param}.arguments must be JSON`, `${param}.arguments`);
      }
      assistantTurn().push({ type: 'tool-call', toolCallId: id, toolName: String(it.name ?? ''), input: args });
      return;
    }
    if (it.type === 'function_call_output') {
      const id = String(it.call_id ?? '');
      const result = {
        type: 'tool-result' as const,
        toolCallId: id,
        toolName: toolNames.get(id) ?? 'unknown',
        output: typeof it.output === 'string' ? it.output : JSON.stringify(it.output ?? ''),
      };
      const last = messages.at(-1);
      if (last?.role === 'tool') last.content.push(result);
      else messages.push({ role: 'tool', content: [result] });
      return;
    }
    // The model's reasoning of an earlier turn, as a Responses client sends it back (Codex does,
    // with its encrypted content): it belongs to the model that wrote it. Passed through to OpenAI
    // as sent; translated into another format it is dropped, as Anthropic thinking blocks are.
    if (it.type === 'reasoning') return;
    if (it.type !== undefined && it.type !== 'message')
      throw bad(
        `${param}.type ${String(it.type).slice(0, 50)} is not supported (message, function_call, function_call_output)`,
        `${param}.type`,
      );
    switch (it.role) {
      case 'system':
      case 'developer':
        system.push(textOf(it.content, `${param}.content`));
        return;
      case 'user':
        messages.push(userContent(it.content, `${param}.content`));
        return;
      case 'assistant':
        messages.push({ role: 'assistant', content: textOf(it.content, `${param}.content`) });
        return;
      default:
        throw bad(`${param}.role must be user, assistant, system or developer`, `${param}.role`);
    }
  });

  const { input, options } = modelInputFields(config, b.model, {});
  input.messages = messages;
  const instructions = [...(typeof b.instructions === 'string' ? [b.instructions] : []), ...system];
  if (instructions.length) input.systemPrompt = instructions.join('\n\n');
  if (typeof b.max_output_tokens === 'number') options.maxTokens = b.max_output_tokens;
  if (typeof b.temperature === 'number') options.temperature = b.temperature;
  if (b.top_p !== undefined && b.top_p !== null) options.topP = b.top_p;
  if (Object.keys(options).length) input.options = options;

  if (Array.isArray(b.tools) && b.tools.length > 0) {
    input.tools = b.tools.map((t, i) => {
      const tool = obj(t);
      if (tool?.type !== 'function' || typeof tool.name !== 'string')
        throw bad(`tools[${i}] must be a function tool ({ type: 'function', name, parameters })`, `tools[${i}]`);
      return {
        name: tool.name,
        ...(typeof tool.description === 'string' ? { description: tool.description } : {}),
        parameters: toolSchema(tool.parameters, `tools[${i}].parameters`),
      };
    });
  }
  const tc = b.tool_choice;
  if (tc === 'auto' || tc === 'none' || tc === 'required') input.toolChoice = tc;
  else if (obj(tc)?.type === 'function' && typeof obj(tc)!.name === 'string') input.toolChoice = { type: 'tool', toolName: obj(tc)!.name };

  const format = obj(obj(b.text)?.format);
  if (format?.type === 'json_schema') {
    input.output = {
      type: 'json',
      schema: obj(format.schema)!,
      ...(typeof format.name === 'string' ? { name: format.name } : {}),
      ...(typeof format.description === 'string' ? { description: format.description } : {}),
    };
  } else if (format?.type === 'json_object') {
    input.output = { type: 'json', schema: { type: 'object' } };
  }
  const key = headers.get(PROVIDER_KEY_HEADER);
  if (key) input.apiKey = key;
  const cache = cacheDirective(headers);
  if (cache) input.cache = cache;
  if (typeof b.user === 'string') input.metadata = { name: b.user.slice(0, 200), type: 'openai-responses' };
  return {
    input,
    model: b.model,
    stream: b.stream === true,
    instructions: typeof b.instructions === 'string' ? b.instructions : null,
    json: input.output !== undefined,
  };
}
