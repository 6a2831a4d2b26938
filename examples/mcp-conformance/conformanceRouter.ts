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
import { CoreError, publicProcedure, router, withServices, type Context } from 'ai-backend';
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

/**
 * MCP multi round-trip requests (2026-07-28 input-required results): a tool returns
 * `{ resultType: 'input_required', inputRequests }` and is called again with the answers in
 * `ctx.mcp.inputResponses` (2026 clients retry; for 2025 sessions the SDK asks and re-calls).
 */
const askInput = (inputRequests: Record<string, { method: string; params?: Record<string, unknown> }>, requestState?: string) => ({
  resultType: 'input_required' as const,
  inputRequests,
  ...(requestState !== undefined ? { requestState } : {}),
});
const elicit = (message: string, properties: Record<string, unknown>, required: string[]) => ({
  method: 'elicitation/create',
  params: { mode: 'form', message, requestedSchema: { type: 'object', properties, required } },
});
const sample = (prompt: string, maxTokens: number) => ({
  method: 'sampling/createMessage',
  params: { messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens },
});
const listRoots = () => ({ method: 'roots/list', params: {} });
/** The content of an accepted elicitation answer, or undefined. */
function accepted<T>(ctx: Context, key: string): T | undefined {
  const r = ctx.mcp?.inputResponses?.[key] as { action?: unknown; content?: unknown } | undefined;
  return r?.action === 'accept' ? (r.content as T) : undefined;
}
const sealed = (ctx: Context, payload: Record<string, unknown>) => mcpOf(ctx).sealState!(payload);

// Reused object schema: `.meta({ id })` puts it under $defs and references it (JSON Schema 2020-12).
const address = z.object({ street: z.string(), city: z.string() }).meta({ id: 'address', $anchor: 'addressDef' });

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
      content: [
        {
          type: 'resource',
          resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' },
        },
      ],
    })),

  test_multiple_content_types: publicProcedure
    .meta({ description: 'Returns text, an image and a resource', mcp: content })
    .input(noInput)
    .query(() => ({
      content: [
        text('Multiple content types test:'),
        { type: 'image', data: RED_PIXEL_PNG, mimeType: 'image/png' },
        {
          type: 'resource',
          resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' },
        },
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
    .input(
      z
        .strictObject({
          name: z.string().optional(),
          address: address.optional(),
          contactMethod: z.enum(['phone', 'email']).optional(),
          phone: z.string().optional(),
          email: z.string().optional(),
        })
        // Composition and conditional keywords (SEP-2106) travel in the schema through `.meta`;
        // the refinement enforces the same rules on the server side.
        .meta({
          allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
          if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
          // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then/else keyword, not a thenable
          then: { required: ['phone'] },
          else: { required: ['email'] },
        })
        .refine((v) => (v.contactMethod === 'phone' ? v.phone !== undefined : v.email !== undefined), {
          message: 'phone (contactMethod phone) or email is required',
        }),
    )
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
    .use(withServices)
    .meta({ description: 'Changes test://watched-resource and notifies its subscribers', mcp: {} })
    .input(noInput)
    .mutation(({ ctx }) => {
      watchedVersion++;
      ctx.resources.notifyUpdated('test://watched-resource');
      return { version: watchedVersion };
    }),

  // MCP 2026-07-28 (SEP-2575) diagnostic tools of the server-stateless scenario.
  test_missing_capability: publicProcedure
    .meta({ description: 'Needs the sampling client capability (an undeclared one is refused with -32021)', mcp: content })
    .input(noInput)
    .mutation(({ ctx }) =>
      ctx.mcp?.inputResponses?.llm_answer === undefined
        ? askInput({ llm_answer: sample('Reply with the single word: pong', 16) })
        : { content: [text('sampling round-trip complete')] },
    ),

  test_streaming_elicitation: publicProcedure
    .meta({ description: 'Answers on a stream that carries no server-to-client request', mcp: content })
    .input(noInput)
    .mutation(() => ({ content: [text('stream observed: result frames only, no top-level requests')] })),

  test_logging_tool: publicProcedure
    .meta({ description: 'Logs; a 2026 request gets log messages only when it set _meta logLevel', mcp: content })
    .input(noInput)
    .mutation(async ({ ctx }) => {
      await ctx.mcp?.log('info', 'test_logging_tool ran');
      return { content: [text('logged through the request-scoped, logLevel-gated channel')] };
    }),

  // SEP-2243: an argument mirrored into the Mcp-Param-Region header, validated by the SDK.
  test_x_mcp_header: publicProcedure
    .meta({ description: 'Tests SEP-2243 Mcp-Param-* server-side validation', mcp: content })
    .input(
      z.object({
        region: z.string().describe('mirrored into Mcp-Param-Region').meta({ 'x-mcp-header': 'Region' }).optional(),
        level: z.number().int().optional(),
      }),
    )
    .mutation(({ input }) => ({ content: [text(`region=${input.region ?? '<none>'}`)] })),

  // MCP 2026-07-28 multi round-trip requests (SEP-2322).
  test_input_required_result_elicitation: publicProcedure
    .meta({ description: 'Asks the caller name through an input-required elicitation', mcp: content })
    .input(noInput)
    .mutation(({ ctx }) => {
      const name = accepted<{ name?: unknown }>(ctx, 'user_name')?.name;
      if (typeof name !== 'string') return askInput({ user_name: elicit('What is your name?', { name: { type: 'string' } }, ['name']) });
      return { content: [text(`Hello, ${name}!`)] };
    }),

  test_input_required_result_sampling: publicProcedure
    .meta({ description: 'Asks the client LLM through an input-required sampling request', mcp: content })
    .input(noInput)
    .mutation(({ ctx }) => {
      const r = ctx.mcp?.inputResponses?.capital_question as { content?: { text?: unknown } } | undefined;
      if (r === undefined) return askInput({ capital_question: sample('What is the capital of France?', 100) });
      return { content: [text(`Sampling response: ${typeof r.content?.text === 'string' ? r.content.text : JSON.stringify(r)}`)] };
    }),

  test_input_required_result_list_roots: publicProcedure
    .meta({ description: 'Asks the client roots through an input-required roots/list request', mcp: content })
    .input(noInput)
    .mutation(({ ctx }) => {
      const r = ctx.mcp?.inputResponses?.client_roots as { roots?: Array<{ uri?: string }> } | undefined;
      if (!Array.isArray(r?.roots)) return askInput({ client_roots: listRoots() });
      return { content: [text(`Client exposed ${r.roots.length} root(s): ${r.roots.map((x) => x.uri).join(', ')}`)] };
    }),

  test_input_required_result_request_state: publicProcedure
    .meta({ description: 'Round-trips a sealed requestState with an elicitation', mcp: content })
    .input(noInput)
    .mutation(async ({ ctx }) => {
      if (accepted(ctx, 'confirm') === undefined) {
        return askInput(
          { confirm: elicit('Please confirm', { ok: { type: 'boolean' } }, ['ok']) },
          await sealed(ctx, { tool: 'request_state' }),
        );
      }
      if (ctx.mcp?.requestState === undefined) throw new CoreError('INVALID_PARAMS', 'requestState missing');
      return { content: [text('state-ok: requestState verified and confirmation received')] };
    }),

  test_input_required_result_multiple_inputs: publicProcedure
    .meta({ description: 'Asks for an elicitation, a sampling and the roots in one round', mcp: content })
    .input(noInput)
    .mutation(async ({ ctx }) => {
      const name = accepted<{ name?: unknown }>(ctx, 'user_name')?.name;
      const greeting = (ctx.mcp?.inputResponses?.greeting as { content?: { text?: unknown } } | undefined)?.content?.text;
      const roots = (ctx.mcp?.inputResponses?.client_roots as { roots?: unknown[] } | undefined)?.roots;
      if (typeof name !== 'string' || typeof greeting !== 'string' || !Array.isArray(roots)) {
        return askInput(
          {
            user_name: elicit('What is your name?', { name: { type: 'string' } }, ['name']),
            greeting: sample('Generate a greeting', 50),
            client_roots: listRoots(),
          },
          await sealed(ctx, { tool: 'multiple_inputs' }),
        );
      }
      return { content: [text(`${greeting} ${name} (${roots.length} root(s) visible)`)] };
    }),

  test_input_required_result_multi_round: publicProcedure
    .meta({ description: 'Two elicitation rounds with evolving requestState', mcp: content })
    .input(noInput)
    .mutation(async ({ ctx }) => {
      const state = ctx.mcp?.requestState as { tool?: unknown; round?: unknown; name?: unknown } | undefined;
      const round = state?.tool === 'multi_round' && typeof state.round === 'number' ? state.round : 0;
      if (round === 0) {
        return askInput(
          { step1: elicit('Step 1: What is your name?', { name: { type: 'string' } }, ['name']) },
          await sealed(ctx, { tool: 'multi_round', round: 1 }),
        );
      }
      if (round === 1) {
        const name = accepted<{ name?: unknown }>(ctx, 'step1')?.name ?? 'unknown';
        return askInput(
          { step2: elicit('Step 2: What is your favorite color?', { color: { type: 'string' } }, ['color']) },
          await sealed(ctx, { tool: 'multi_round', round: 2, name }),
        );
      }
      const color = accepted<{ color?: unknown }>(ctx, 'step2')?.color ?? 'unknown';
      return { content: [text(`Multi-round complete: ${String(state?.name ?? 'unknown')} likes ${String(color)}`)] };
    }),

  test_input_required_result_tampered_state: publicProcedure
    .meta({ description: 'Refuses a retry whose requestState fails verification', mcp: content })
    .input(noInput)
    .mutation(async ({ ctx }) => {
      if (ctx.mcp?.requestState !== undefined && accepted(ctx, 'confirm') !== undefined)
        return { content: [text('integrity-ok: requestState verified')] };
      return askInput(
        { confirm: elicit('Please confirm', { ok: { type: 'boolean' } }, ['ok']) },
        await sealed(ctx, { tool: 'tampered_state' }),
      );
    }),

  test_input_required_result_capabilities: publicProcedure
    .meta({ description: 'Asks only for the input kinds the declared client capabilities cover', mcp: content })
    .input(noInput)
    .mutation(({ ctx }) => {
      if (ctx.mcp?.inputResponses !== undefined) return { content: [text('Capability-aware input requests fulfilled')] };
      const caps = ctx.mcp?.clientCapabilities ?? {};
      const requests: Record<string, { method: string; params?: Record<string, unknown> }> = {};
      if (caps.elicitation !== undefined) requests.user_name = elicit('What is your name?', { name: { type: 'string' } }, ['name']);
      if (caps.sampling !== undefined) requests.greeting = sample('Generate a short greeting', 50);
      if (caps.roots !== undefined) requests.client_roots = listRoots();
      if (Object.keys(requests).length === 0) return { content: [text('No declared client capability supports an in-band input request')] };
      return askInput(requests);
    }),

  test_input_required_result_prompt: publicProcedure
    .meta({ description: 'A prompt that asks for context (elicitation) before rendering', mcp: { tool: false, prompt: true } })
    .input(noInput)
    .query(({ ctx }) => {
      const context = accepted<{ context?: unknown }>(ctx, 'user_context')?.context;
      if (typeof context !== 'string')
        return askInput({ user_context: elicit('What context should the prompt use?', { context: { type: 'string' } }, ['context']) });
      return `Use the following context: ${context}`;
    }),

  // The Tasks extension (io.modelcontextprotocol/tasks, SEP-2663): `longRunning` procedures
  // run as tasks for 2026-07-28 clients that negotiated the extension.
  greet: publicProcedure
    .meta({ description: 'Greets by name (synchronous, never a task)', mcp: content })
    .input(z.object({ name: z.string() }))
    .query(({ input }) => ({ content: [text(`Hello, ${input.name}!`)] })),

  slow_compute: publicProcedure
    .meta({ description: 'Sleeps for `seconds`, then answers (a task when the client speaks Tasks)', longRunning: true, mcp: content })
    .input(z.object({ seconds: z.number().min(0).max(600), label: z.string().max(200).optional() }))
    .mutation(async ({ ctx, input }) => {
      await ctx.mcp?.progress(0, input.seconds, 'computing');
      await sleep(input.seconds * 1000, ctx.req.signal);
      return { content: [text(`Computed ${input.label ?? 'result'} after ${input.seconds}s`)] };
    }),

  failing_job: publicProcedure
    .meta({
      description: 'Reports a tool error after about a second (task required)',
      longRunning: { taskSupport: 'required' },
      mcp: content,
    })
    .input(noInput)
    .mutation(async ({ ctx }) => {
      await sleep(1000, ctx.req.signal);
      return { content: [text('the job failed: nothing to process')], isError: true };
    }),

  protocol_error_job: publicProcedure
    .meta({ description: 'Crashes with an internal error (the task fails)', longRunning: true, mcp: content })
    .input(noInput)
    .mutation(async ({ ctx }) => {
      await sleep(200, ctx.req.signal);
      throw new Error('simulated crash');
    }),

  confirm_delete: publicProcedure
    .meta({ description: 'Asks for confirmation (inside the task) before deleting a file', longRunning: true, mcp: content })
    .input(z.object({ filename: z.string().max(500) }))
    .mutation(({ ctx, input }) => {
      const answer = accepted<{ confirm?: unknown }>(ctx, 'confirm');
      if (answer === undefined)
        return askInput({ confirm: elicit(`Delete ${input.filename}?`, { confirm: { type: 'boolean' } }, ['confirm']) });
      return { content: [text(answer.confirm === true ? `Deleted ${input.filename}` : `Kept ${input.filename}`)] };
    }),

  multi_input: publicProcedure
    .meta({ description: 'Asks two questions at once (inside the task)', longRunning: true, mcp: content })
    .input(noInput)
    .mutation(({ ctx }) => {
      const first = accepted<{ name?: unknown }>(ctx, 'first');
      const second = accepted<{ name?: unknown }>(ctx, 'second');
      if (first === undefined || second === undefined) {
        return askInput({
          first: elicit('First name?', { name: { type: 'string' } }, ['name']),
          second: elicit('Second name?', { name: { type: 'string' } }, ['name']),
        });
      }
      return { content: [text(`Got ${String(first.name)} and ${String(second.name)}`)] };
    }),

  test_tool_with_task: publicProcedure
    .meta({
      description: 'Asks for a name synchronously (MRTR), then does the work as a task',
      longRunning: { taskSupport: 'required', inputBeforeTask: true },
      mcp: content,
    })
    .input(noInput)
    .mutation(async ({ ctx }) => {
      const name = accepted<{ name?: unknown }>(ctx, 'user_name')?.name;
      if (typeof name !== 'string') return askInput({ user_name: elicit('What is your name?', { name: { type: 'string' } }, ['name']) });
      await sleep(300, ctx.req.signal);
      return { content: [text(`Task finished for ${name}`)] };
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
        arg1: z
          .string()
          .describe('First test argument')
          .meta({ examples: ['paris', 'park', 'party'] }),
        arg2: z.string().describe('Second test argument'),
      }),
    )
    .query(({ input }) => `Prompt with arguments: arg1='${input.arg1}', arg2='${input.arg2}'`),

  test_prompt_with_embedded_resource: publicProcedure
    .meta({ description: 'A prompt that embeds a resource', mcp: { tool: false, prompt: true } })
    .input(z.object({ resourceUri: z.string().describe('URI of the resource to embed') }))
    .query(({ input }) => ({
      messages: [
        {
          role: 'user',
          content: {
            type: 'resource',
            resource: { uri: input.resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' },
          },
        },
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
    .meta({
      description: 'A static text resource',
      mcp: { tool: false, resource: { uri: 'test://static-text', name: 'static-text', mimeType: 'text/plain' } },
    })
    .query(() => 'This is the content of the static text resource.'),

  staticBinary: publicProcedure
    .meta({
      description: 'A static binary resource (PNG)',
      mcp: { tool: false, resource: { uri: 'test://static-binary', name: 'static-binary', mimeType: 'image/png' } },
    })
    .query(() => ({ blob: RED_PIXEL_PNG })),

  watched: publicProcedure
    .meta({
      description: 'A resource that changes; subscribe to it',
      mcp: { tool: false, resource: { uri: 'test://watched-resource', name: 'watched-resource', mimeType: 'text/plain' } },
    })
    .query(() => `Watched resource, version ${watchedVersion}`),

  templateData: publicProcedure
    .meta({
      description: 'Data for an id',
      mcp: { tool: false, resource: { uriTemplate: 'test://template/{id}/data', name: 'template-data', mimeType: 'application/json' } },
    })
    .input(z.object({ id: z.string() }))
    .query(({ input }) => ({
      text: JSON.stringify({ id: input.id, templateTest: true, data: `Data for ID: ${input.id}` }),
      mimeType: 'application/json',
    })),
});
