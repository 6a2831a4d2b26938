import { z } from '../../lib/zod.js';

/**
 * The chat inputs of ai.generateText and ai.streamText, beside the spec's `content` /
 * `systemPrompt`: messages with the four roles, tool definitions (JSON Schema), and structured
 * output. Shapes follow the AI SDK's ModelMessage so a client written against it reads naturally.
 * Each schema is built on its first use (z.lazy): a start-up builds none of them.
 */

/** Most texts one ai.embed call takes. */
export const MAX_EMBED_INPUTS = 2048;

export const ChatMessage = z.lazy(() => {
  const TextPart = z.object({ type: z.literal('text'), text: z.string().max(10_000_000) });
  /** `image`: an https URL, a `data:` URL, or base64. */
  const ImagePart = z.object({ type: z.literal('image'), image: z.string().min(1), mediaType: z.string().max(100).optional() });
  /** `data`: an https URL, a `data:` URL, or base64; `mediaType` e.g. application/pdf. */
  const FilePart = z.object({
    type: z.literal('file'),
    data: z.string().min(1),
    mediaType: z.string().min(1).max(100),
    filename: z.string().max(255).optional(),
  });
  const ToolCallPart = z.object({
    type: z.literal('tool-call'),
    toolCallId: z.string().min(1).max(200),
    toolName: z.string().min(1).max(128),
    input: z.unknown(),
  });
  const ToolResultPart = z.object({
    type: z.literal('tool-result'),
    toolCallId: z.string().min(1).max(200),
    toolName: z.string().min(1).max(128),
    /** Any JSON value (a string is sent as text). */
    output: z.unknown(),
    isError: z.boolean().optional(),
  });
  return z.discriminatedUnion('role', [
    /** `content` may be `@name` of a server prompt, like systemPrompt. */
    z.object({ role: z.literal('system'), content: z.string().max(1_000_000) }),
    z.object({
      role: z.literal('user'),
      content: z.union([
        z.string().max(10_000_000),
        z
          .array(z.discriminatedUnion('type', [TextPart, ImagePart, FilePart]))
          .min(1)
          .max(100),
      ]),
    }),
    z.object({
      role: z.literal('assistant'),
      content: z.union([z.string().max(10_000_000), z.array(z.discriminatedUnion('type', [TextPart, ToolCallPart])).max(100)]),
    }),
    z.object({ role: z.literal('tool'), content: z.array(ToolResultPart).min(1).max(100) }),
  ]);
});
export type ChatMessage = z.infer<typeof ChatMessage>;

export const ToolDefinition = z.lazy(() =>
  z.object({
    name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'tool names use letters, digits, _ and - (at most 64)'),
    description: z.string().max(4000).optional(),
    /** JSON Schema of the tool's input (an object schema). */
    parameters: z.record(z.string(), z.unknown()),
  }),
);
export type ToolDefinition = z.infer<typeof ToolDefinition>;

export const ToolChoice = z.lazy(() =>
  z.union([z.enum(['auto', 'none', 'required']), z.object({ type: z.literal('tool'), toolName: z.string().min(1).max(64) })]),
);
export type ToolChoice = z.infer<typeof ToolChoice>;

/** Structured output: the answer's `object` is validated against `schema`. */
export const OutputSpec = z.lazy(() =>
  z.object({
    type: z.literal('json'),
    schema: z.record(z.string(), z.unknown()),
    name: z.string().max(64).optional(),
    description: z.string().max(4000).optional(),
  }),
);
export type OutputSpec = z.infer<typeof OutputSpec>;

/** Fields shared by ai.generateText and ai.streamText (built with the input schema, on its first use). */
export const textInputFields = () => ({
  /** The user's message (spec). Either `content` or `messages`. */
  content: z.string().min(1).max(10_000_000).optional(),
  /** Inline text, or `@name` of a server prompt (spec). Optional with `messages`. */
  systemPrompt: z.string().max(1_000_000).optional(),
  messages: z.array(ChatMessage).min(1).max(1000).optional(),
  tools: z.array(ToolDefinition).max(128).optional(),
  toolChoice: ToolChoice.optional(),
  output: OutputSpec.optional(),
  /** Targets tried in order if the first fails with 429, 5xx, a timeout or a connection error: `provider/model` or an alias. */
  fallbacks: z.array(z.string().min(1).max(300)).max(5).optional(),
});

/** The refinement both procedures apply: exactly one of content / messages. */
export function checkContentOrMessages(
  v: { content?: string | undefined; messages?: unknown[] | undefined; systemPrompt?: string | undefined },
  ctx: z.RefinementCtx,
): void {
  if ((v.content === undefined) === (v.messages === undefined)) {
    ctx.addIssue({ code: 'custom', message: 'send either content or messages', path: ['content'] });
  } else if (v.content !== undefined && v.systemPrompt === undefined) {
    ctx.addIssue({ code: 'custom', message: 'systemPrompt is required with content', path: ['systemPrompt'] });
  }
}
