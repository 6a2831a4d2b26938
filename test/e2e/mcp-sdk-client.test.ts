// @every-node: CI runs this file on every Node version it tests (docs/testing.md, "CI: phases and times").
/**
 * The official MCP SDK client against the default server plus a small custom router: prompts,
 * completion, resources (templates, subscriptions), logging levels, progress, cancellation,
 * sampling and elicitation, tool annotations, structured output and input-validation errors.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { CoreError, publicProcedure, router } from '@ai-backend/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/testServer.js';

let cancelObserved: (reason: string) => void = () => undefined;
let slowStarted: () => void = () => undefined;

const testRouter = router({
  slow: publicProcedure
    .meta({ description: 'Waits until cancelled', mcp: {} })
    .input(z.object({}).default({}))
    .mutation(
      ({ ctx }) =>
        new Promise((_, reject) => {
          slowStarted();
          const timer = setTimeout(() => reject(new CoreError('INTERNAL', 'not cancelled')), 10_000);
          ctx.req.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            cancelObserved('aborted');
            reject(new CoreError('CANCELLED', 'cancelled'));
          });
        }),
    ),
  logAll: publicProcedure
    .meta({ description: 'Logs at every level', mcp: {} })
    .input(z.object({}).default({}))
    .mutation(async ({ ctx }) => {
      for (const level of ['debug', 'info', 'notice', 'warning', 'error'] as const) await ctx.mcp?.log(level, `at ${level}`);
      return 'ok';
    }),
  stats: publicProcedure
    .meta({ description: 'Structured output', mcp: { annotations: { readOnlyHint: true, idempotentHint: true, destructiveHint: false } } })
    .input(z.object({ n: z.number().int().min(1).max(10) }))
    .output(z.object({ n: z.number(), squares: z.array(z.number()) }))
    .query(({ input }) => ({ n: input.n, squares: Array.from({ length: input.n }, (_, i) => (i + 1) ** 2) })),
  ask: publicProcedure
    .meta({ description: 'Sampling then elicitation', mcp: {} })
    .input(z.object({ kind: z.enum(['sampling', 'elicitation', 'urlElicitation']) }))
    .mutation(async ({ ctx, input }) => {
      if (!ctx.mcp) throw new CoreError('NOT_CONFIGURED', 'MCP only');
      if (input.kind === 'sampling') {
        const r = await ctx.mcp.request<{ content: { text: string }; model: string }>('sampling/createMessage', {
          messages: [{ role: 'user', content: { type: 'text', text: 'say hi' } }],
          maxTokens: 10,
        });
        return `${r.model}: ${r.content.text}`;
      }
      if (input.kind === 'urlElicitation') {
        const u = await ctx.mcp.request<{ action: string }>('elicitation/create', {
          mode: 'url',
          message: 'Approve in your browser',
          url: 'https://example.com/approve',
          elicitationId: 'e2e-url-1',
        });
        return `url:${u.action}`;
      }
      const r = await ctx.mcp.request<{ action: string; content?: { ok?: boolean } }>('elicitation/create', {
        message: 'Proceed?',
        requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
      });
      return `${r.action}:${String(r.content?.ok)}`;
    }),
  notes: publicProcedure
    .meta({ description: 'Note by id', mcp: { tool: false, resource: { uriTemplate: 'notes://{id}', mimeType: 'text/plain' } } })
    .input(z.object({ id: z.string() }))
    .query(({ input }) => `note ${input.id}`),
});

let srv: TestServer;
const clients: Client[] = [];

/** `onStream` is told when the standalone GET event stream (server-sent notifications) is open. */
async function connect(capabilities: Record<string, unknown> = {}, onStream?: () => void): Promise<Client> {
  const client = new Client({ name: 'e2e', version: '1.0.0' }, { capabilities });
  const watched: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    if ((init?.method ?? 'GET') === 'GET' && res.ok && res.headers.get('content-type')?.includes('text/event-stream')) onStream?.();
    return res;
  };
  await client.connect(new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`), { fetch: watched }));
  clients.push(client);
  return client;
}

const textOf = (r: unknown) => (r as { content: Array<{ type: string; text?: string }> }).content[0]?.text ?? '';

beforeAll(async () => {
  srv = await startTestServer({ mcp: { auth: { authType: 'none' } }, customRouters: { t: testRouter } });
  srv.server.ready().then((rt) =>
    rt.resources.register({
      uri: 'memo://today',
      name: 'today',
      mimeType: 'text/plain',
      read: () => ({ content: 'memo', mimeType: 'text/plain' }),
    }),
  );
  await srv.server.ready();
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await srv?.stop();
});

describe('prompts', () => {
  it('lists the four mcp.*Prompt procedures with their arguments', async () => {
    const client = await connect();
    const { prompts } = await client.listPrompts();
    const names = prompts.map((p) => p.name);
    expect(names).toEqual(
      expect.arrayContaining(['apiDocumentationPrompt', 'codeReviewPrompt', 'explainConceptPrompt', 'incidentResponsePrompt']),
    );
    const explain = prompts.find((p) => p.name === 'explainConceptPrompt')!;
    expect(explain.arguments).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'concept', required: true }),
        expect.objectContaining({ name: 'level', required: true }),
        expect.objectContaining({ name: 'includeExamples', required: false }),
      ]),
    );
  });

  it('prompts/get renders with arguments; missing or invalid ones are -32602', async () => {
    const client = await connect();
    const r = await client.getPrompt({
      name: 'explainConceptPrompt',
      arguments: { concept: 'monads', level: 'beginner', includeExamples: 'no' },
    });
    expect(r.messages[0]).toMatchObject({ role: 'user', content: { type: 'text' } });
    expect(JSON.stringify(r.messages)).toContain('monads');
    expect(JSON.stringify(r.messages)).toContain('Do not include examples');
    await expect(client.getPrompt({ name: 'explainConceptPrompt', arguments: { concept: 'x' } })).rejects.toMatchObject({ code: -32602 });
    await expect(client.getPrompt({ name: 'explainConceptPrompt', arguments: { concept: 'x', level: 'guru' } })).rejects.toMatchObject({
      code: -32602,
    });
    await expect(client.getPrompt({ name: 'nope' })).rejects.toMatchObject({ code: -32602 });
  });

  it('completion/complete offers enum values by prefix', async () => {
    const client = await connect();
    const r = await client.complete({
      ref: { type: 'ref/prompt', name: 'incidentResponsePrompt' },
      argument: { name: 'severity', value: 'h' },
    });
    expect(r.completion.values).toEqual(['high']);
    const all = await client.complete({
      ref: { type: 'ref/prompt', name: 'explainConceptPrompt' },
      argument: { name: 'level', value: '' },
    });
    expect(all.completion).toMatchObject({ values: ['beginner', 'intermediate', 'advanced'], total: 3, hasMore: false });
  });

  it('a prompt registered at run time appears and is rendered', async () => {
    const rt = await srv.server.ready();
    rt.prompts.register({
      name: 'ops-greeting',
      description: 'greets',
      arguments: [{ name: 'who', required: true }],
      get: (a) => ({ messages: [{ role: 'user', content: { type: 'text', text: `hi ${a.who}` } }] }),
    });
    const client = await connect();
    expect((await client.listPrompts()).prompts.map((p) => p.name)).toContain('ops-greeting');
    expect((await client.getPrompt({ name: 'ops-greeting', arguments: { who: 'ann' } })).messages[0]!.content).toEqual({
      type: 'text',
      text: 'hi ann',
    });
  });
});

describe('resources', () => {
  it('lists, reads, and reads through a template', async () => {
    const client = await connect();
    const { resources } = await client.listResources();
    expect(resources).toContainEqual(expect.objectContaining({ uri: 'memo://today', name: 'today' }));
    expect((await client.readResource({ uri: 'memo://today' })).contents[0]).toEqual({
      uri: 'memo://today',
      mimeType: 'text/plain',
      text: 'memo',
    });
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates).toContainEqual(expect.objectContaining({ uriTemplate: 'notes://{id}', name: 'notes' }));
    expect((await client.readResource({ uri: 'notes://42' })).contents[0]).toMatchObject({ text: 'note 42' });
    // SEP-2164: resource not found is -32602 with the URI in data.
    await expect(client.readResource({ uri: 'file:///etc/passwd' })).rejects.toMatchObject({
      code: -32602,
      data: { uri: 'file:///etc/passwd' },
    });
  });

  it('subscribe delivers notifications/resources/updated; unsubscribe stops them', async () => {
    let streamOpen!: () => void;
    const opened = new Promise<void>((r) => (streamOpen = r));
    const client = await connect({}, () => streamOpen());
    const updates: string[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
    await client.subscribeResource({ uri: 'memo://today' });
    await opened; // updates travel on the GET stream: the server has it once its head is here
    const rt = await srv.server.ready();
    rt.resources.notifyUpdated('memo://today');
    rt.resources.notifyUpdated('memo://other');
    await expect.poll(() => updates).toEqual(['memo://today']);
    await client.unsubscribeResource({ uri: 'memo://today' });
    rt.resources.notifyUpdated('memo://today');
    // A barrier instead of a pause: an update sent after the one that must not arrive, on the same
    // stream. Once it is here, the earlier one would have been too.
    rt.resources.register({
      uri: 'memo://barrier',
      name: 'barrier',
      mimeType: 'text/plain',
      read: () => ({ content: 'b', mimeType: 'text/plain' }),
    });
    await client.subscribeResource({ uri: 'memo://barrier' });
    rt.resources.notifyUpdated('memo://barrier');
    await expect.poll(() => updates.at(-1)).toBe('memo://barrier');
    expect(updates).toEqual(['memo://today', 'memo://barrier']);
    await expect(client.subscribeResource({ uri: 'memo://missing' })).rejects.toMatchObject({
      code: -32602,
      data: { uri: 'memo://missing' },
    });
  });
});

describe('tools', () => {
  it('tools/list carries annotations and an outputSchema; the result has structuredContent', async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    const stats = tools.find((t) => t.name === 'stats')!;
    expect(stats.annotations).toEqual({ readOnlyHint: true, idempotentHint: true, destructiveHint: false });
    expect(stats.outputSchema).toMatchObject({ type: 'object', properties: { squares: { type: 'array' } } });
    expect(tools.find((t) => t.name === 'greeting')!.annotations).toMatchObject({ readOnlyHint: true });
    expect(tools.some((t) => t.name === 'notes')).toBe(false); // resource-only procedure
    const r = await client.callTool({ name: 'stats', arguments: { n: 3 } });
    expect(r.structuredContent).toEqual({ n: 3, squares: [1, 4, 9] });
    expect(JSON.parse(textOf(r))).toEqual({ n: 3, squares: [1, 4, 9] });
  });

  it('invalid arguments are a tool error (isError) the model can read; an unknown tool is -32602', async () => {
    const client = await connect();
    const r = await client.callTool({ name: 'stats', arguments: { n: 99 } });
    expect(r.isError).toBe(true);
    expect(textOf(r)).toMatch(/BAD_REQUEST/);
    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toMatchObject({ code: -32602 });
  });

  it('logging/setLevel filters notifications/message', async () => {
    const client = await connect();
    const seen: string[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void seen.push(n.params.level));
    await client.callTool({ name: 'logAll', arguments: {} });
    expect(seen).toEqual(['info', 'notice', 'warning', 'error']); // default level: info
    seen.length = 0;
    await client.setLoggingLevel('warning');
    await client.callTool({ name: 'logAll', arguments: {} });
    expect(seen).toEqual(['warning', 'error']);
    seen.length = 0;
    await client.setLoggingLevel('debug');
    await client.callTool({ name: 'logAll', arguments: {} });
    expect(seen).toEqual(['debug', 'info', 'notice', 'warning', 'error']);
  });

  it('notifications/cancelled aborts the procedure through its AbortSignal', async () => {
    const client = await connect();
    const observed = new Promise<string>((resolve) => (cancelObserved = resolve));
    const ac = new AbortController();
    const started = new Promise<void>((resolve) => (slowStarted = resolve));
    const call = client.callTool({ name: 'slow', arguments: {} }, CallToolResultSchema, { signal: ac.signal });
    await started; // the procedure runs: cancel it now, not before it was called
    ac.abort('user stop');
    await expect(call).rejects.toThrow();
    await expect(observed).resolves.toBe('aborted');
  });

  it('sampling and elicitation reach a client that declared them', async () => {
    const client = await connect({ sampling: {}, elicitation: {} });
    client.setRequestHandler(CreateMessageRequestSchema, () => ({
      role: 'assistant',
      content: { type: 'text', text: 'hi!' },
      model: 'm1',
    }));
    client.setRequestHandler(ElicitRequestSchema, () => ({ action: 'accept', content: { ok: true } }));
    expect(textOf(await client.callTool({ name: 'ask', arguments: { kind: 'sampling' } }))).toBe('m1: hi!');
    expect(textOf(await client.callTool({ name: 'ask', arguments: { kind: 'elicitation' } }))).toBe('accept:true');
  });

  it('an elicitation goes out only in a mode the client declared (an empty elicitation capability is form only)', async () => {
    const formOnly = await connect({ elicitation: {} });
    formOnly.setRequestHandler(ElicitRequestSchema, () => ({ action: 'accept', content: { ok: true } }));
    const refused = await formOnly.callTool({ name: 'ask', arguments: { kind: 'urlElicitation' } });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/did not declare url-mode elicitation/);
    expect(textOf(await formOnly.callTool({ name: 'ask', arguments: { kind: 'elicitation' } }))).toBe('accept:true');
    const urlOnly = await connect({ elicitation: { url: {} } });
    urlOnly.setRequestHandler(ElicitRequestSchema, () => ({ action: 'accept' }));
    expect(textOf(await urlOnly.callTool({ name: 'ask', arguments: { kind: 'urlElicitation' } }))).toBe('url:accept');
    expect(textOf(await urlOnly.callTool({ name: 'ask', arguments: { kind: 'elicitation' } }))).toMatch(
      /did not declare form-mode elicitation/,
    );
  });

  it('without the capability the tool gets a clear error', async () => {
    const client = await connect();
    const r = await client.callTool({ name: 'ask', arguments: { kind: 'sampling' } });
    expect(r.isError).toBe(true);
    expect(textOf(r)).toMatch(/did not declare the sampling capability/);
    const e = await client.callTool({ name: 'ask', arguments: { kind: 'elicitation' } });
    expect(textOf(e)).toMatch(/did not declare the elicitation capability/);
  });
});
