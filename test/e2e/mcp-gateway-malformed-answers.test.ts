/**
 * An upstream that answers a request with a JSON-RPC result that is not what the method returns:
 * `"result": null`, a string, an array, a number, an object without the method's required field
 * or with it of the wrong type, or a response with neither result nor error. The MCP SDK client
 * drops a response whose result is no object as a message it cannot read, so the caller waited
 * for the server's whole timeoutMs. Now every such answer fails its request at once with an error
 * naming the server: a tool error for tools/call, a JSON-RPC error for prompts/get and
 * resources/read, and a connection whose tools/list is malformed is failed as an unreachable one
 * is (its prompts/list or resources/list: none listed). The upstream is a raw script
 * (helpers/malformedAnswers.mjs) over stdio, and over Streamable HTTP answering as JSON and on SSE
 * streams; the caller is the real MCP SDK client on /mcp.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpRevisionClient, type Revision } from './helpers/mcpRevisionClient.js';
import { runtimeOfServices } from '@ai-backend/core/internal';
import { waitForUpstreams } from './helpers/mcpUpstreams.js';
import { startTestServer, type TestServer } from './helpers/testServer.js';

const UPSTREAM = fileURLToPath(new URL('./helpers/malformedAnswers.mjs', import.meta.url));
/** Far above what any answer here takes: a call that waits for it is the bug. */
const TIMEOUT_MS = 20_000;
const PROMPT = 5_000;
const SHAPES = ['null', 'text', 'list', 'number', 'empty', 'bad', 'bare'];
/** A tools/call answer `{}` is a result with no content: the SDK client reads it as `content: []`. */
const TOOL_SHAPES = SHAPES.filter((s) => s !== 'empty');
/** Servers with one malformed list: the method and the shape of its answer. */
const BAD_LISTS = {
  badtools: ['tools/list', 'null'],
  badtools2: ['tools/list', 'bad'],
  badprompts: ['prompts/list', 'text'],
  badresources: ['resources/list', 'bare'],
};

/** The servers with malformed answers to calls: over stdio, and over HTTP answering as JSON or on SSE streams. */
const CALLED = ['odd', 'hjson', 'hsse'] as const;

let server: TestServer;
let settledInMs = 0;
const closers: Array<() => Promise<unknown>> = [];
const children: ChildProcess[] = [];

/** The script as a Streamable HTTP server answering as `as`: its URL. */
async function httpUpstream(as: 'json' | 'sse', args: string[] = []): Promise<string> {
  const child = spawn(process.execPath, [UPSTREAM, `--http=${as}`, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const [line] = (await once(createInterface({ input: child.stdout! }), 'line')) as [string];
  return `http://127.0.0.1:${line.replace('listening ', '')}/mcp`;
}

beforeAll(async () => {
  const upstream = (args: string[]) => ({ command: process.execPath, args: [UPSTREAM, ...args], timeoutMs: TIMEOUT_MS });
  const http = async (as: 'json' | 'sse', args?: string[]) => ({
    type: 'http' as const,
    url: await httpUpstream(as, args),
    timeoutMs: TIMEOUT_MS,
  });
  const remote = { hjson: await http('json'), hsse: await http('sse'), hssetools: await http('sse', ['tools/list', 'list']) };
  const started = Date.now();
  server = await startTestServer({
    mcp: { auth: { authType: 'none' } },
    gateway: { allowPrivateNetwork: true },
    mcpServers: {
      odd: upstream([]),
      ...remote,
      ...Object.fromEntries(Object.entries(BAD_LISTS).map(([name, args]) => [name, upstream(args)])),
    },
  });
  const rt = runtimeOfServices(await server.server.ready());
  await waitForUpstreams(rt, { state: 'settled', timeoutMs: TIMEOUT_MS });
  settledInMs = Date.now() - started;
}, 60_000);

afterAll(async () => {
  await Promise.all(closers.map((c) => c().catch(() => undefined)));
  await server?.stop();
  for (const child of children) child.kill();
});

const connect = (revision: Revision) => mcpRevisionClient(server.url, revision, 'gw-malformed', closers);

const textOf = (r: unknown) => (r as { content: Array<{ text?: string }> }).content[0]?.text;

/** `fn`'s outcome (its value or its error) and how long it took. */
async function timed(fn: () => Promise<unknown>): Promise<{ ms: number; value?: unknown; error?: Error }> {
  const started = Date.now();
  try {
    const value = await fn();
    return { ms: Date.now() - started, value };
  } catch (error) {
    return { ms: Date.now() - started, error: error as Error };
  }
}

describe('MCP gateway: upstream answers that are no result of their method', () => {
  for (const revision of ['2025-11-25', '2026-07-28'] as const) {
    it(`${revision}: tools/call gets a tool error naming the server at once`, async () => {
      const client = await connect(revision);
      for (const upstream of CALLED) {
        for (const shape of TOOL_SHAPES) {
          const r = await timed(() => client.callTool({ name: `${upstream}__${shape}`, arguments: {} }, undefined, { timeout: 60_000 }));
          const what = `${upstream} ${shape}`;
          expect(r.error, what).toBeUndefined();
          expect(r.ms, what).toBeLessThan(PROMPT);
          expect((r.value as { isError?: boolean }).isError, what).toBe(true);
          expect(textOf(r.value), what).toMatch(new RegExp(`MCP server "${upstream}" answered tools/call ${shape} with no valid result: `));
        }
        expect(textOf(await client.callTool({ name: `${upstream}__ok`, arguments: {} }))).toBe('called ok');
      }
    }, 60_000);

    it(`${revision}: prompts/get and resources/read get a JSON-RPC error naming the server at once`, async () => {
      const client = await connect(revision);
      for (const upstream of CALLED) {
        for (const shape of SHAPES) {
          const what = `${upstream} ${shape}`;
          const prompt = await timed(() => client.getPrompt({ name: `${upstream}__${shape}` }, { timeout: 60_000 }));
          expect(prompt.ms, what).toBeLessThan(PROMPT);
          expect(prompt.error?.message, what).toMatch(
            new RegExp(`MCP server "${upstream}" answered prompts/get ${shape} with no valid result: `),
          );
        }
        const ok = await client.getPrompt({ name: `${upstream}__ok` });
        expect(ok.messages[0]?.content).toMatchObject({ text: 'prompt ok' });
      }
      // Resources keep their URIs: the first server listing one is asked (the stdio one).
      for (const shape of SHAPES) {
        const read = await timed(() => client.readResource({ uri: `odd://${shape}` }, { timeout: 60_000 }));
        expect(read.ms, shape).toBeLessThan(PROMPT);
        expect(read.error?.message, shape).toMatch(/MCP server "odd" answered resources\/read with no valid result: /);
      }
      expect((await client.readResource({ uri: 'odd://ok' })).contents[0]).toMatchObject({ text: 'read ok' });
    }, 60_000);
  }

  it('a malformed tools/list fails the connection at once, saying why; a malformed prompts/list or resources/list lists none', async () => {
    expect(settledInMs).toBeLessThan(PROMPT + 5_000);
    const rt = runtimeOfServices(await server.server.ready());
    const status = new Map(rt.gateway.status().map((s) => [s.name, s]));
    for (const name of ['badtools', 'badtools2', 'hssetools']) {
      // Failed, or already reconnecting after the failure (its backoff starts at 250 ms): the error
      // stays on the status while it reconnects, and it must be the malformed list's.
      expect(['failed', 'connecting'], name).toContain(status.get(name)?.state);
      expect(status.get(name)?.error, name).toMatch(new RegExp(`MCP server "${name}" answered tools/list with no valid result`));
    }
    expect(status.get('badprompts')?.state).toBe('ready');
    expect(status.get('badresources')?.state).toBe('ready');
    const client = await connect('2025-11-25');
    const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
    expect(prompts).toContain('odd__ok');
    expect(prompts.filter((p) => p.startsWith('badprompts__'))).toEqual([]);
    expect(prompts).toContain('badresources__ok');
    const resources = (await client.listResources()).resources.map((r) => r.name);
    expect(resources.length).toBeGreaterThan(0);
    // Every server's tools are still listed but those of the ones whose tools/list failed.
    const tools = (await client.listTools()).tools.map((t) => t.name);
    expect(tools).toContain('badprompts__ok');
    expect(tools.some((t) => t.startsWith('badtools'))).toBe(false);
  }, 60_000);
});
