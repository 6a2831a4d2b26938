// @every-node: CI runs this file on every Node version it tests (docs/testing.md, "CI: phases and times").
/**
 * Both MCP revisions on one /mcp endpoint, each with its own official client:
 * - the v2 SDK client (`@modelcontextprotocol/client`) pinned to 2026-07-28: stateless requests
 *   (server/discover, `_meta` envelope, MCP-Protocol-Version / Mcp-Method / Mcp-Name headers);
 * - the 1.x SDK client (`@modelcontextprotocol/sdk`, 2025-11-25): initialize and a session.
 * Tools, prompts, resources, progress, cancellation and elicitation (2026: an input-required
 * result the client answers by retrying; 2025: the same procedure, asked through the session),
 * roots as client workspaces (2026: asked in-band per call; 2025: through the session), and
 * 2026 requests spread over two instances that share nothing (no sticky routing).
 */
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { CoreError, publicProcedure, router } from '@ai-backend/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/testServer.js';
import { describeMatrix } from './helpers/describeMatrix.js';

let cancelled: Array<string> = [];
let slowStarted: () => void = () => undefined;

const testRouter = router({
  countdown: publicProcedure
    .meta({ description: 'Reports progress three times', mcp: {} })
    .input(z.object({ steps: z.number().int().min(1).max(5) }))
    .mutation(async ({ ctx, input }) => {
      for (let i = 1; i <= input.steps; i++) await ctx.mcp?.progress(i, input.steps, `step ${i}`);
      return `counted ${input.steps}`;
    }),
  slow: publicProcedure
    .meta({ description: 'Waits until cancelled', mcp: {} })
    .input(z.object({ tag: z.string() }))
    .mutation(
      ({ ctx, input }) =>
        new Promise((_, reject) => {
          slowStarted();
          const timer = setTimeout(() => reject(new CoreError('INTERNAL', 'not cancelled')), 10_000);
          ctx.req.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            cancelled.push(input.tag);
            reject(new CoreError('CANCELLED', 'cancelled'));
          });
        }),
    ),
  whoAreYou: publicProcedure
    .meta({ description: 'Asks the user their name (elicitation) and greets them', mcp: { result: 'content' } })
    .input(z.object({}).default({}))
    .mutation(({ ctx }) => {
      const answer = ctx.mcp?.inputResponses?.name as { action?: string; content?: { name?: unknown } } | undefined;
      if (answer?.action === 'accept' && typeof answer.content?.name === 'string')
        return { content: [{ type: 'text', text: `Hi ${answer.content.name}` }] };
      return {
        resultType: 'input_required',
        inputRequests: {
          name: {
            method: 'elicitation/create',
            params: {
              mode: 'form',
              message: 'Your name?',
              requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
            },
          },
        },
      };
    }),
});

const config = { mcp: { auth: { authType: 'none' as const } }, customRouters: { t: testRouter } };
let a: TestServer;
let b: TestServer;
const closers: Array<() => Promise<unknown>> = [];

describeMatrix('MCP, both revisions on one endpoint', (mode) => {
  beforeAll(async () => {
    // Two instances, each with its own memory storage: nothing shared between them.
    [a, b] = await Promise.all([startTestServer(config, mode), startTestServer(config, mode)]);
    for (const s of [a, b]) {
      const rt = await s.server.ready();
      rt.resources.register({
        uri: 'memo://today',
        name: 'today',
        mimeType: 'text/plain',
        read: () => ({ content: 'memo', mimeType: 'text/plain' }),
      });
    }
  });
  afterAll(async () => {
    await Promise.all(closers.map((c) => c().catch(() => undefined)));
    await Promise.all([a?.stop(), b?.stop()]);
  });

  /** A 2026-07-28 client; `urls` are taken in turn, one per HTTP request (a load balancer without sticky routing). */
  async function modern(urls: string[], seen: string[] = []): Promise<ModernClient> {
    let next = 0;
    const roundRobin: typeof fetch = (input, init) => {
      const target = urls[next++ % urls.length]!;
      seen.push(target);
      const url = String(input instanceof Request ? input.url : input).replace(/^http:\/\/[^/]+/, target);
      return fetch(url, init);
    };
    const client = new ModernClient(
      { name: 'e2e-2026', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { elicitation: { form: {} } } },
    );
    client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { name: 'Ada' } }));
    await client.connect(new ModernTransport(new URL(`${urls[0]}/mcp`), { fetch: roundRobin }));
    closers.push(() => client.close());
    return client;
  }

  async function legacy(url: string): Promise<LegacyClient> {
    const client = new LegacyClient({ name: 'e2e-2025', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Grace' } }));
    const transport = new LegacyTransport(new URL(`${url}/mcp`));
    await client.connect(transport);
    closers.push(() => client.close());
    return client;
  }

  /** tools/call with request options: the v2 client takes them second, the 1.x client third (after a result schema). */
  function callWith(
    client: ModernClient | LegacyClient,
    params: { name: string; arguments: Record<string, unknown> },
    options: { onprogress?: (p: { progress: number }) => void; signal?: AbortSignal },
  ) {
    return client instanceof ModernClient ? client.callTool(params, options) : client.callTool(params, undefined, options);
  }

  const textOf = (r: unknown) => (r as { content: Array<{ type: string; text?: string }> }).content[0]?.text ?? '';

  describe('one endpoint, both revisions', () => {
    it('the 2026 client negotiates 2026-07-28 without a session; the 2025 client gets a session', async () => {
      const seen: string[] = [];
      const m = await modern([a.url], seen);
      expect(m.getDiscoverResult()?.supportedVersions).toContain('2026-07-28');
      const l = await legacy(a.url);
      expect(l.getServerVersion()?.name).toBe('ai-backend');
      // The 2026 exchange never carried a session id.
      const res = await a.fetch('/mcp', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'tools/list',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/list',
          params: {
            _meta: {
              'io.modelcontextprotocol/protocolVersion': '2026-07-28',
              'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          },
        }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('mcp-session-id')).toBeNull();
      const body = (await res.json()) as { result: { tools: unknown[]; ttlMs: number; cacheScope: string; resultType: string } };
      expect(body.result).toMatchObject({ resultType: 'complete', ttlMs: 300_000, cacheScope: 'private' });
    });

    it('a 2026 request with a header that disagrees with its body is refused, naming the header', async () => {
      const res = await a.fetch('/mcp', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'tools/list',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 2,
          method: 'tools/call',
          params: {
            name: 'greeting',
            arguments: { name: 'x' },
            _meta: {
              'io.modelcontextprotocol/protocolVersion': '2026-07-28',
              'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          },
        }),
      });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: { code: number; message: string } };
      expect(body.error.code).toBe(-32020);
      expect(body.error.message).toMatch(/Mcp-Method/i);
    });

    it('tools, prompts and resources: the same procedures answer both clients', async () => {
      const m = await modern([a.url]);
      const l = await legacy(a.url);
      for (const client of [m, l] as Array<ModernClient | LegacyClient>) {
        const { tools } = await client.listTools();
        expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['greeting', 'countdown', 'slow', 'whoAreYou']));
        expect(JSON.parse(textOf(await client.callTool({ name: 'greeting', arguments: { name: 'Ann', language: 'fr' } })))).toMatchObject({
          greeting: 'Bonjour, Ann!',
        });
        const { prompts } = await client.listPrompts();
        expect(prompts.map((p) => p.name)).toContain('explainConceptPrompt');
        const prompt = await client.getPrompt({ name: 'explainConceptPrompt', arguments: { concept: 'caching', level: 'beginner' } });
        expect(JSON.stringify(prompt.messages)).toContain('caching');
        const { resources } = await client.listResources();
        expect(resources.map((r) => r.uri)).toContain('memo://today');
        expect((await client.readResource({ uri: 'memo://today' })).contents[0]).toMatchObject({ text: 'memo' });
        // SEP-2164 on both revisions.
        await expect(client.readResource({ uri: 'memo://missing' })).rejects.toMatchObject({ code: -32602 });
      }
    });

    it('progress reaches both clients', async () => {
      for (const client of [await modern([a.url]), await legacy(a.url)] as Array<ModernClient | LegacyClient>) {
        const steps: number[] = [];
        const r = await callWith(
          client,
          { name: 'countdown', arguments: { steps: 3 } },
          { onprogress: (p) => void steps.push(p.progress) },
        );
        expect(textOf(r)).toBe('counted 3');
        expect(steps).toEqual([1, 2, 3]);
      }
    });

    it('cancellation: aborting the call reaches the procedure on both revisions', async () => {
      cancelled = [];
      for (const [tag, client] of [
        ['2026', await modern([a.url])],
        ['2025', await legacy(a.url)],
      ] as Array<[string, ModernClient | LegacyClient]>) {
        const started = new Promise<void>((resolve) => (slowStarted = resolve));
        const ac = new AbortController();
        const call = callWith(client, { name: 'slow', arguments: { tag } }, { signal: ac.signal });
        await started;
        ac.abort();
        await expect(call).rejects.toBeDefined();
        await expect.poll(() => cancelled).toContain(tag);
      }
    });

    it('elicitation: an input-required result for 2026, a server-to-client request for 2025, one procedure', async () => {
      expect(textOf(await (await modern([a.url])).callTool({ name: 'whoAreYou', arguments: {} }))).toBe('Hi Ada');
      expect(textOf(await (await legacy(a.url)).callTool({ name: 'whoAreYou', arguments: {} }))).toBe('Hi Grace');
    });

    it('roots become client workspaces: asked in-band for a 2026 call, through the session for 2025; same guards', async () => {
      const roots = [
        { uri: 'file:///home/ada/project', name: 'project' },
        { uri: 'https://example.com/not-a-folder', name: 'web' },
      ];
      const m = new ModernClient(
        { name: 'e2e-2026-roots', version: '1.0.0' },
        { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { roots: {} } },
      );
      let asked = 0;
      m.setRequestHandler('roots/list', async () => (asked++, { roots }));
      await m.connect(new ModernTransport(new URL(`${a.url}/mcp`)));
      closers.push(() => m.close());
      const listed = JSON.parse(textOf(await m.callTool({ name: 'listClientWorkspaces', arguments: { detailed: true } }))) as Array<{
        uri: string;
        source: string;
      }>;
      expect(asked).toBe(1);
      // Only file:// roots are kept, as for 2025 sessions.
      expect(listed).toEqual([expect.objectContaining({ uri: 'file:///home/ada/project', source: 'mcp-roots' })]);
      // Request-scoped: a 2026 client without the roots capability sees none of them.
      const plain = await modern([a.url]);
      expect(JSON.parse(textOf(await plain.callTool({ name: 'listClientWorkspaces', arguments: {} })))).toEqual([]);

      const l = new LegacyClient({ name: 'e2e-2025-roots', version: '1.0.0' }, { capabilities: { roots: {} } });
      let legacyAsked = 0;
      // The v2 SDK validates a 2025 roots/list answer as a whole (file:// URIs only), so this client sends valid ones.
      l.setRequestHandler(ListRootsRequestSchema, async () => (legacyAsked++, { roots: roots.filter((r) => r.uri.startsWith('file://')) }));
      await l.connect(new LegacyTransport(new URL(`${a.url}/mcp`)));
      closers.push(() => l.close());
      // The session asks roots/list once its GET stream is open (a server-to-client request needs it).
      await expect.poll(() => legacyAsked, { timeout: 5000 }).toBe(1);
      await expect
        .poll(
          async () => JSON.parse(textOf(await l.callTool({ name: 'listClientWorkspaces', arguments: { detailed: true } }))) as unknown[],
          { timeout: 5000 },
        )
        .toEqual([expect.objectContaining({ uri: 'file:///home/ada/project', source: 'mcp-roots' })]);
    });

    it('2026 requests spread over two instances without sticky routing all succeed', async () => {
      const seen: string[] = [];
      const m = await modern([a.url, b.url], seen);
      for (let i = 0; i < 4; i++) {
        expect(JSON.parse(textOf(await m.callTool({ name: 'greeting', arguments: { name: `n${i}` } })))).toMatchObject({
          greeting: `Hello, n${i}!`,
        });
      }
      // The input-required retry lands on the other instance than the first round.
      expect(textOf(await m.callTool({ name: 'whoAreYou', arguments: {} }))).toBe('Hi Ada');
      expect(new Set(seen)).toEqual(new Set([a.url, b.url]));
    });
  });
});
