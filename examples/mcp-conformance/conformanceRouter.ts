/**
 * The fixtures the official MCP conformance suite (`npx conformance server`) expects, written
 * as an ordinary custom router: tools, prompts and resources are tRPC procedures with
 * `meta.mcp`, so they also answer on /trpc and /rpc and go through the same middleware.
 *
 * - a tool: `meta.mcp` (name = procedure key); `result: 'content'` returns MCP content blocks.
 * - a prompt: `meta.mcp.prompt`; input fields become the arguments (`tool: false` hides the tool).
 * - a resource: `meta.mcp.resource` with `uri`, or `uriTemplate` whose variables are the input.
 * - inside a procedure, `ctx.mcp` (only on MCP) reports progress, logs, and asks the client
 *   for sampling or elicitation.
 */
import { z } from 'zod';
import { CoreError, publicProcedure, router, type Context } from 'ai-backend';
import { RED_PIXEL_PNG, toneWav } from './fixtures.js';

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), reject(new CoreError('CANCELLED', 'cancelled'))), { once: true });
  });

/** ctx.mcp exists only when the procedure runs as an MCP tool. */
function mcpOf(ctx: Context) {
  if (!ctx.mcp) throw new CoreError('NOT_CONFIGURED', 'this tool needs an MCP client');
  return ctx.mcp;
}

const text = (t: string) => ({ type: 'text' as const, text: t });
const noInput = z.object({}).default({});
const content = { result: 'content' as const };
let watchedVersion = 1;

// Reused object schema: `.meta({ id })` puts it under $defs and references it (JSON Schema 2020-12).
const address = z.object({ street: z.string(), city: z.string() }).meta({ id: 'address' });

export const conformanceRouter = router({
  test_simple_text: publicProcedure
    .meta({ description: 'Returns a simple text response', mcp: { ...content, annotations: { readOnlyHint: true } } })
    .input(noInput)
    .query(() => ({ content: [text('This is a simple text response for testing.')] })),

  test_image_content: publicProcedure
    .meta({ description: 'Returns a 1x1 PNG image', mcp: content })
    .input(noInput)
    .query(() => ({ content: [{ type: 'image', data: RED_PIXEL_PNG, mimeType: 'image/png' }] })),

  test_audio_content: publicProcedure
    .meta({ description: 'Returns a short WAV tone', mcp: content })
    .input(noInput)
    .query(() => ({ content: [{ type: 'audio', data: toneWav(), mimeType: 'audio/wav' }] })),

  test_embedded_resource: publicProcedure
    .meta({ description: 'Returns an embedded text resource', mcp: content })
    .input(noInput)
    .query(() => ({
      content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }],
    })),

  test_multiple_content_types: publicProcedure
    .meta({ description: 'Returns text, an image and a resource', mcp: content })
    .input(noInput)
    .query(() => ({
      content: [
        text('Multiple content types test:'),
        { type: 'image', data: RED_PIXEL_PNG, mimeType: 'image/png' },
        { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } },
      ],
    })),

  test_tool_with_logging: publicProcedure
    .meta({ description: 'Sends three log messages while it runs', mcp: {} })
    .input(noInput)
    .mutation(async ({ ctx }) => {
      await ctx.mcp?.log('info', 'Tool execution started');
      await sleep(50, ctx.req.signal);
      await ctx.mcp?.log('info', 'Tool processing data');
      await sleep(50, ctx.req.signal);
      await ctx.mcp?.log('info', 'Tool execution completed');
      return 'Tool with logging executed successfully';
    }),

  test_tool_with_progress: publicProcedure
    .meta({ description: 'Reports progress 0, 50, 100 of 100', mcp: {} })
    .input(noInput)
    .mutation(async ({ ctx }) => {
      for (const step of [0, 50, 100]) {
        await ctx.mcp?.progress(step, 100, `step ${step}`);
        if (step < 100) await sleep(50, ctx.req.signal);
      }
      return 'Tool with progress executed successfully';
    }),

  test_error_handling: publicProcedure
    .meta({ description: 'Always fails', mcp: content })
    .input(noInput)
    .mutation(() => ({ isError: true, content: [text('This tool intentionally returns an error for testing')] })),

  test_sampling: publicProcedure
    .meta({ description: 'Asks the client LLM to answer a prompt (sampling)', mcp: {} })
    .input(z.object({ prompt: z.string().describe('The prompt to send to the LLM') }))
    .mutation(async ({ ctx, input }) => {
      const r = await mcpOf(ctx).request<{ content: { type: string; text?: string } }>('sampling/createMessage', {
        messages: [{ role: 'user', content: { type: 'text', text: input.prompt } }],
        maxTokens: 100,
      });
      return `LLM response: ${r.content.type === 'text' ? r.content.text : `[${r.content.type}]`}`;
    }),

  test_elicitation: publicProcedure
    .meta({ description: 'Asks the user for a username and email (elicitation)', mcp: {} })
    .input(z.object({ message: z.string().describe('The message to show the user') }))
    .mutation(async ({ ctx, input }) => {
      const r = await mcpOf(ctx).request<{ action: string; content?: unknown }>('elicitation/create', {
        message: input.message,
        requestedSchema: {
          type: 'object',
          properties: {
            username: { type: 'string', description: "User's response" },
            email: { type: 'string', description: "User's email address" },
          },
          required: ['username', 'email'],
        },
      });
      return `User response: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`;
    }),

  test_elicitation_sep1034_defaults: publicProcedure
    .meta({ description: 'Elicitation whose fields all have defaults (SEP-1034)', mcp: {} })
    .input(noInput)
    .mutation(async ({ ctx }) => {
      const r = await mcpOf(ctx).request<{ action: string; content?: unknown }>('elicitation/create', {
        message: 'Please review your information (defaults are pre-filled)',
        requestedSchema: {
          type: 'object',
          properties: {
            name: { type: 'string', description: 'User name', default: 'John Doe' },
            age: { type: 'integer', description: 'User age', default: 30 },
            score: { type: 'number', description: 'User score', default: 95.5 },
            status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
            verified: { type: 'boolean', description: 'Verification status', default: true },
          },
          required: [],
        },
      });
      return `Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`;
    }),

  test_elicitation_sep1330_enums: publicProcedure
    .meta({ description: 'Elicitation with the five enum schema forms (SEP-1330)', mcp: {} })
    .input(noInput)
    .mutation(async ({ ctx }) => {
      const r = await mcpOf(ctx).request<{ action: string; content?: unknown }>('elicitation/create', {
        message: 'Please choose',
        requestedSchema: {
          type: 'object',
          properties: {
            untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
            titledSingle: {
              type: 'string',
              oneOf: [
                { const: 'value1', title: 'First Option' },
                { const: 'value2', title: 'Second Option' },
                { const: 'value3', title: 'Third Option' },
              ],
            },
            legacyEnum: { type: 'string', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
            untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
            titledMulti: {
              type: 'array',
              items: {
                anyOf: [
                  { const: 'value1', title: 'First Choice' },
                  { const: 'value2', title: 'Second Choice' },
                  { const: 'value3', title: 'Third Choice' },
                ],
              },
            },
          },
          required: [],
        },
      });
      return `Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`;
    }),

  json_schema_2020_12_tool: publicProcedure
    .meta({ description: 'Tool with JSON Schema 2020-12 features', mcp: {} })
    .input(z.strictObject({ name: z.string().optional(), address: address.optional() }))
    .query(({ input }) => `Received ${JSON.stringify(input)}`),

  test_reconnection: publicProcedure
    .meta({ description: 'Closes its SSE stream mid-call; the answer arrives after the client reconnects (SEP-1699)', mcp: {} })
    .input(noInput)
    .mutation(async ({ ctx }) => {
      ctx.mcp?.closeStream?.();
      await sleep(100, ctx.req.signal);
      return 'Reconnection test completed successfully';
    }),

  update_watched_resource: publicProcedure
    .meta({ description: 'Changes test://watched-resource and notifies its subscribers', mcp: {} })
    .input(noInput)
    .mutation(({ ctx }) => {
      watchedVersion++;
      ctx.runtime.resources.notifyUpdated('test://watched-resource');
      return { version: watchedVersion };
    }),

  // Prompts: `tool: false` publishes them only as prompts.
  test_simple_prompt: publicProcedure
    .meta({ description: 'A simple prompt without arguments', mcp: { tool: false, prompt: true } })
    .input(noInput)
    .query(() => 'This is a simple prompt for testing.'),

  test_prompt_with_arguments: publicProcedure
    .meta({ description: 'A prompt with two required arguments', mcp: { tool: false, prompt: true } })
    .input(
      z.object({
        arg1: z.string().describe('First test argument').meta({ examples: ['paris', 'park', 'party'] }),
        arg2: z.string().describe('Second test argument'),
      }),
    )
    .query(({ input }) => `Prompt with arguments: arg1='${input.arg1}', arg2='${input.arg2}'`),

  test_prompt_with_embedded_resource: publicProcedure
    .meta({ description: 'A prompt that embeds a resource', mcp: { tool: false, prompt: true } })
    .input(z.object({ resourceUri: z.string().describe('URI of the resource to embed') }))
    .query(({ input }) => ({
      messages: [
        { role: 'user', content: { type: 'resource', resource: { uri: input.resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } } },
        { role: 'user', content: text('Please process the embedded resource above.') },
      ],
    })),

  test_prompt_with_image: publicProcedure
    .meta({ description: 'A prompt with an image', mcp: { tool: false, prompt: true } })
    .input(noInput)
    .query(() => ({
      messages: [
        { role: 'user', content: { type: 'image', data: RED_PIXEL_PNG, mimeType: 'image/png' } },
        { role: 'user', content: text('Please analyze the image above.') },
      ],
    })),

  // Resources.
  staticText: publicProcedure
    .meta({ description: 'A static text resource', mcp: { tool: false, resource: { uri: 'test://static-text', name: 'static-text', mimeType: 'text/plain' } } })
    .query(() => 'This is the content of the static text resource.'),

  staticBinary: publicProcedure
    .meta({ description: 'A static binary resource (PNG)', mcp: { tool: false, resource: { uri: 'test://static-binary', name: 'static-binary', mimeType: 'image/png' } } })
    .query(() => ({ blob: RED_PIXEL_PNG })),

  watched: publicProcedure
    .meta({ description: 'A resource that changes; subscribe to it', mcp: { tool: false, resource: { uri: 'test://watched-resource', name: 'watched-resource', mimeType: 'text/plain' } } })
    .query(() => `Watched resource, version ${watchedVersion}`),

  templateData: publicProcedure
    .meta({ description: 'Data for an id', mcp: { tool: false, resource: { uriTemplate: 'test://template/{id}/data', name: 'template-data', mimeType: 'application/json' } } })
    .input(z.object({ id: z.string() }))
    .query(({ input }) => ({ text: JSON.stringify({ id: input.id, templateTest: true, data: `Data for ID: ${input.id}` }), mimeType: 'application/json' })),
});
