import type { ModelMessage } from 'ai';
import type { ProviderId } from '../../config/sections/ai.js';
import type { ResolvedConfig } from '../../config/schema.js';
import { CoreError } from '../../kernel/CoreError.js';
import type { ChatMessage } from './chatInput.js';
import type { ModelRegistry } from './ModelRegistry.js';
import { PER_MESSAGE_OVERHEAD_TOKENS, utf8 } from './callModel.js';
import type { ResolvedSystemPrompt, SystemPromptStore } from './SystemPromptStore.js';

/** What the AI SDK call gets: a system text and either a plain prompt or chat messages. */
export interface BuiltPrompt {
  system: string;
  prompt?: string;
  messages?: ModelMessage[];
  /** Characters of all text sent (system, messages, tool results), for the token estimate. */
  chars: number;
  /** Image and file parts (each reserved as ATTACHMENT_TOKENS in the estimate). */
  attachments: number;
  /** Every system text as resolved (named server prompts included), for the payer rules. */
  resolved: ResolvedSystemPrompt[];
}

/**
 * Tokens reserved per image or file part. Providers bill an image by its size (Anthropic about
 * 1,600 tokens for a 1.15 MP image, OpenAI up to about 1,500 at high detail); settlement uses
 * the reported usage, so this only has to keep the hold above the real cost of common inputs.
 */
export const ATTACHMENT_TOKENS = 2000;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** An inline attachment's base64 (a data: URL's payload, or the value itself), whitespace removed; undefined for an http(s) URL. */
function inlinePayload(value: string): string | undefined {
  if (/^https?:\/\//i.test(value)) return undefined;
  const payload = value.startsWith('data:') ? value.slice(value.indexOf(',') + 1) : value;
  return payload.replace(/\s+/g, '');
}

const decodedSize = (compact: string) =>
  Math.floor((compact.length * 3) / 4) - (compact.endsWith('==') ? 2 : compact.endsWith('=') ? 1 : 0);

/**
 * Decoded bytes of an inline attachment (base64 or a data: URL; 0 for an http(s) URL, which the
 * provider fetches), unchecked: what `ai.maxAttachmentBytes` bounds, also where the /v1 body is
 * forwarded as sent (wireInputBound).
 */
export function attachmentBytes(value: string): number {
  const compact = inlinePayload(value);
  return compact === undefined ? 0 : decodedSize(compact);
}

/** Decoded size of base64 (or of a data: URL's payload); undefined for an http(s) URL. */
function inlineBytes(value: string): number | undefined {
  const compact = inlinePayload(value);
  if (compact === undefined) return undefined;
  if (!BASE64.test(compact))
    throw new CoreError('INVALID_PARAMS', 'an image or file part must be an http(s) URL, a data: URL or base64', {
      details: { reason: 'invalid_attachment' },
    });
  return decodedSize(compact);
}

function attachment(
  value: string,
  kind: 'image' | 'file',
  ctx: { provider: ProviderId; model: string; registry: ModelRegistry; limits: ResolvedConfig['ai']; count: { n: number; bytes: number } },
): string | URL {
  const accepts = ctx.registry.get(ctx.provider, ctx.model)?.input ?? ['text'];
  if (!accepts.includes(kind)) {
    throw new CoreError('INVALID_PARAMS', `model ${ctx.model} of ${ctx.provider} does not accept ${kind} parts`, {
      details: { reason: 'unsupported_input', provider: ctx.provider, model: ctx.model, input: kind },
    });
  }
  if (++ctx.count.n > ctx.limits.maxAttachments)
    throw new CoreError('PAYLOAD_TOO_LARGE', `at most ${ctx.limits.maxAttachments} image or file parts per request`);
  if (/^http:\/\//i.test(value))
    throw new CoreError('INVALID_PARAMS', 'attachment URLs must use https', { details: { reason: 'invalid_attachment' } });
  const bytes = inlineBytes(value);
  if (bytes !== undefined) {
    if (bytes > ctx.limits.maxAttachmentBytes)
      throw new CoreError('PAYLOAD_TOO_LARGE', `an image or file part is larger than ${ctx.limits.maxAttachmentBytes} bytes`);
    ctx.count.bytes += bytes;
    return value;
  }
  return new URL(value);
}

function toolOutput(output: unknown, isError: boolean | undefined) {
  if (typeof output === 'string')
    return isError ? { type: 'error-text' as const, value: output } : { type: 'text' as const, value: output };
  const value = (output ?? null) as import('ai').JSONValue;
  return isError ? { type: 'error-json' as const, value } : { type: 'json' as const, value };
}

/**
 * Turn the request's `content`/`systemPrompt` or `messages` into the AI SDK's prompt. System
 * texts (systemPrompt and system messages alike) go through the prompt store, so `@name`
 * resolves server-side and `allowInlineSystemPrompts: false` holds on every path. Image and file
 * parts are checked against the model's registry entry and the size limits.
 */
export function buildPrompt(
  input: { content?: string | undefined; systemPrompt?: string | undefined; messages?: ChatMessage[] | undefined },
  ctx: { provider: ProviderId; model: string; registry: ModelRegistry; prompts: SystemPromptStore; ai: ResolvedConfig['ai'] },
): BuiltPrompt {
  const { ai, prompts } = ctx;
  const systems: string[] = [];
  const resolved: ResolvedSystemPrompt[] = [];
  const resolve = (text: string) => {
    const r = prompts.resolve(text);
    resolved.push(r);
    if (r.text) systems.push(r.text);
  };
  if (input.systemPrompt !== undefined) resolve(input.systemPrompt);
  if (input.content !== undefined) {
    if (input.content.length > ai.maxContentChars)
      throw new CoreError('PAYLOAD_TOO_LARGE', `content is longer than ${ai.maxContentChars} characters`);
    const system = systems.join('\n\n');
    return { system, prompt: input.content, chars: system.length + input.content.length, attachments: 0, resolved };
  }
  const count = { n: 0, bytes: 0 };
  const actx = { provider: ctx.provider, model: ctx.model, registry: ctx.registry, limits: ai, count };
  let chars = 0;
  const messages: ModelMessage[] = [];
  // Every provider refuses a tool result that answers no earlier tool call; refused here, it is
  // a clear INVALID_PARAMS before any upstream request instead of an upstream 400 (a 502 to us).
  const calls = new Set<string>();
  for (const [i, m] of (input.messages ?? []).entries()) {
    switch (m.role) {
      case 'system': {
        // System messages become the one system text, wherever they stand (all four providers take one).
        resolve(m.content);
        break;
      }
      case 'user':
        if (typeof m.content === 'string') {
          chars += m.content.length;
          messages.push({ role: 'user', content: m.content });
        } else {
          messages.push({
            role: 'user',
            content: m.content.map((p) => {
              if (p.type === 'text') return ((chars += p.text.length), p);
              if (p.type === 'image')
                return {
                  type: 'image' as const,
                  image: attachment(p.image, 'image', actx),
                  ...(p.mediaType ? { mediaType: p.mediaType } : {}),
                };
              return {
                type: 'file' as const,
                data: attachment(p.data, 'file', actx),
                mediaType: p.mediaType,
                ...(p.filename ? { filename: p.filename } : {}),
              };
            }),
          });
        }
        break;
      case 'assistant':
        if (typeof m.content === 'string') {
          chars += m.content.length;
          messages.push({ role: 'assistant', content: m.content });
        } else {
          messages.push({
            role: 'assistant',
            content: m.content.map((p) => {
              if (p.type === 'text') return ((chars += p.text.length), p);
              chars += JSON.stringify(p.input ?? null).length;
              calls.add(p.toolCallId);
              return { type: 'tool-call' as const, toolCallId: p.toolCallId, toolName: p.toolName, input: p.input ?? {} };
            }),
          });
        }
        break;
      case 'tool':
        messages.push({
          role: 'tool',
          content: m.content.map((p, j) => {
            if (!calls.has(p.toolCallId)) {
              throw new CoreError(
                'INVALID_PARAMS',
                `messages[${i}]: tool result "${p.toolCallId.slice(0, 200)}" answers no earlier assistant tool call`,
                { details: { reason: 'invalid_tools', field: `messages.${i}.content.${j}.toolCallId` } },
              );
            }
            chars += typeof p.output === 'string' ? p.output.length : JSON.stringify(p.output ?? null).length;
            return {
              type: 'tool-result' as const,
              toolCallId: p.toolCallId,
              toolName: p.toolName,
              output: toolOutput(p.output, p.isError),
            };
          }),
        });
        break;
    }
  }
  if (messages.length === 0) throw new CoreError('INVALID_PARAMS', 'messages need at least one user, assistant or tool message');
  const system = systems.join('\n\n');
  chars += system.length;
  if (chars > ai.maxContentChars) throw new CoreError('PAYLOAD_TOO_LARGE', `the messages are longer than ${ai.maxContentChars} characters`);
  return { system, messages, chars, attachments: count.n, resolved };
}

/** UTF-8 bytes of every text a built prompt sends (tool calls and results as their JSON). */
export function promptBytes(prompt: BuiltPrompt): number {
  let bytes = utf8(prompt.system) + (prompt.prompt !== undefined ? utf8(prompt.prompt) : 0);
  for (const m of prompt.messages ?? []) {
    bytes += PER_MESSAGE_OVERHEAD_TOKENS;
    if (typeof m.content === 'string') {
      bytes += utf8(m.content);
      continue;
    }
    for (const part of m.content as Array<{ type: string; text?: string; input?: unknown; output?: unknown }>) {
      if (part.type === 'text') bytes += utf8(part.text ?? '');
      else if (part.type === 'tool-call') bytes += utf8(JSON.stringify(part.input ?? null));
      else if (part.type === 'tool-result') bytes += utf8(JSON.stringify(part.output ?? null));
    }
  }
  return bytes;
}
