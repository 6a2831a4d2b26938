/**
 * Progress of an upstream tool that runs only as a task (docs/mcp-gateway.md, "What clients
 * see"): the gateway runs it as a task at the upstream (callAsTask) and asked for no progress, and
 * the MCP SDK client it uses forgets a request's progress token once the request is answered,
 * which a task-augmented tools/call is at once (the task was created). So the upstream's progress,
 * sent under that token for the task's whole life, never reached the caller, while a plain call's
 * did. Now the upstream is asked for progress under a token of the gateway's own and each
 * notification reaches the caller under the caller's token, for 2025-11-25 and 2026-07-28 clients.
 * The upstream is a small server built with the MCP SDK (helpers/taskProgressUpstream.mjs). And an
 * upstream task's answer that is no tool result was passed on as ours, which the caller's client
 * refused as a protocol error: now it is a tool error naming the server, as for a plain call.
 */
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptUpstreamGateway, type ScriptUpstreamGateway } from './helpers/scriptUpstreamGateway.js';

let server: ScriptUpstreamGateway;
const closers: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  server = await startScriptUpstreamGateway({
    prog: { script: 'taskProgressUpstream.mjs', timeoutMs: 45_000 },
    odd: { script: 'malformedTaskUpstream.mjs', timeoutMs: 45_000 },
  });
}, 30_000);

afterAll(async () => {
  await Promise.all(closers.map((c) => c().catch(() => undefined)));
  await server?.stop();
});

type Progress = { progress: number; total?: number; message?: string };
const textOf = (r: unknown) => (r as { content: Array<{ text?: string }> }).content[0]?.text;

describe('MCP gateway: progress of an upstream tool that runs only as a task', () => {
  it('2025-11-25: the upstream task progress reaches the caller under its progress token', async () => {
    const client = new LegacyClient({ name: 'gw-task-progress-2025', version: '1' });
    await client.connect(new LegacyTransport(new URL(`${server.url}/mcp`)));
    closers.push(() => client.close());
    const seen: Progress[] = [];
    const result = await client.callTool({ name: 'prog__slow-count', arguments: {} }, undefined, {
      onprogress: (p) => seen.push(p),
      timeout: 45_000,
    });
    expect(textOf(result)).toBe('counted to 3 (progress token present)');
    expect(seen.map((p) => [p.progress, p.total, p.message])).toEqual([
      [1, 3, 'step 1'],
      [2, 3, 'step 2'],
      [3, 3, 'step 3'],
    ]);
  }, 60_000);

  it('2026-07-28: the same progress on the request stream', async () => {
    const client = new ModernClient(
      { name: 'gw-task-progress-2026', version: '1' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(new ModernTransport(new URL(`${server.url}/mcp`)));
    closers.push(() => client.close());
    const seen: Progress[] = [];
    const result = await client.callTool({ name: 'prog__slow-count', arguments: {} }, { onprogress: (p) => seen.push(p), timeout: 45_000 });
    expect(textOf(result)).toBe('counted to 3 (progress token present)');
    expect(seen.map((p) => p.message)).toEqual(['step 1', 'step 2', 'step 3']);
  }, 60_000);

  it('a call without a progress token asks the upstream for none', async () => {
    const client = new LegacyClient({ name: 'gw-task-progress-none', version: '1' });
    await client.connect(new LegacyTransport(new URL(`${server.url}/mcp`)));
    closers.push(() => client.close());
    expect(textOf(await client.callTool({ name: 'prog__slow-count', arguments: {} }))).toBe('counted to 3 (progress token absent)');
  }, 60_000);

  it("an upstream task's answer that is no tool result is a tool error naming the server, not a protocol error", async () => {
    const client = new LegacyClient({ name: 'gw-task-malformed', version: '1' });
    await client.connect(new LegacyTransport(new URL(`${server.url}/mcp`)));
    closers.push(() => client.close());
    for (const tool of ['at-once', 'via-task']) {
      const r = (await client.callTool({ name: `odd__${tool}`, arguments: {} })) as { isError?: boolean };
      expect(r.isError).toBe(true);
      expect(textOf(r)).toMatch(new RegExp(`MCP server "odd" failed on tools/call ${tool}: Invalid result for tools/call`));
    }
    expect(textOf(await client.callTool({ name: 'odd__echo', arguments: {} }))).toBe('echoed');
  }, 60_000);
});
