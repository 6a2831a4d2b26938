import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { publicProcedure, router } from '@ai-backend/core';
import { waitFor } from '@ai-backend/test-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  callVia,
  createTestUpstream,
  mcpClient,
  rpcCall,
  startAiServer,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { EVERYTHING, waitForUpstreams } from './helpers/mcpUpstreams.js';
import { envelope2026, modernPost, modernReply } from './helpers/mcpWire.js';
import { RawMcp } from './helpers/rawMcp.js';

/**
 * A refusal by an API key's rules that the caller is answered as "unknown" (so the key cannot
 * tell the thing exists) is still one `key_refused` line of the security log (docs/security.md,
 * "Refusals of an API key"): an upstream tool of the MCP gateway on /mcp (2025 session and
 * 2026-07-28 request), /rpc and /trpc; an upstream prompt, resource, resource subscription and
 * completion; and our own resources and prompts where MCP names them outside a read
 * (completion/complete, resources/subscribe, subscriptions/listen). Each answer stays exactly the
 * one a thing that does not exist gets. Read from the log file the server writes.
 */
const OWNER = 'unknown-seclog-owner';
const DOC = 'demo://resource/static/document/architecture.md';
const UPSTREAM_TEMPLATE = 'demo://resource/dynamic/text/{resourceId}';
const TEMPLATE = 'weather://stations/{id}';
const weather = router({
  history: publicProcedure
    .meta({
      description: 'Saved forecasts',
      keyAccess: { scope: 'weather:write' },
      mcp: { tool: false, resource: { uri: 'weather://history' } },
    })
    .query(() => ({ days: 3 })),
  stationInfo: publicProcedure
    .meta({ description: 'A station', keyAccess: { scope: 'weather:write' }, mcp: { tool: false, resource: { uriTemplate: TEMPLATE } } })
    .input(z.object({ id: z.string() }))
    .query(({ input }) => input.id),
});

let upstream: TestUpstream;
let gw: AiServer;
let dir: string;
let logFile: string;
let owner: string;

beforeAll(async () => {
  upstream = await createTestUpstream();
  dir = await mkdtemp(path.join(tmpdir(), 'key-seclog-unknown-'));
  logFile = path.join(dir, 'security.log');
  gw = await startAiServer(upstream, {
    mcp: {
      auth: { authType: 'jwt' },
      rateLimiting: { enabled: false },
      securityLogging: { enabled: true, logLevel: 'warn', logToFile: true, logFilePath: logFile },
    },
    customRouters: { weather },
    mcpServers: {
      every: { command: process.execPath, args: [EVERYTHING, 'stdio'], timeoutMs: 10_000 },
      // Reached through search_tools / call_tool only.
      found: { command: process.execPath, args: [EVERYTHING, 'stdio'], timeoutMs: 10_000, expose: 'search' },
    },
  });
  owner = await tokenFor(OWNER);
  await waitForUpstreams(gw.runtime);
}, 60_000);
afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
  await rm(dir, { recursive: true, force: true });
});

/** Key → its id, for every key made here. */
const idOf: Record<string, string> = {};
async function keyWith(rules: Record<string, unknown>): Promise<string> {
  const made = await rpcCall(gw.url, owner, 'keys.create', { name: 'unknown-seclog', ...rules });
  if (!made.result) throw new Error(made.text);
  idOf[made.result.key] = made.result.apiKey.id;
  return made.result.key as string;
}

async function session(credential: string): Promise<RawMcp> {
  const mcp = new RawMcp(gw.url, credential);
  expect((await mcp.initialize()).status).toBe(200);
  return mcp;
}

/** An answer with `names` made alike, to compare the answer for a refused thing with the one for a missing thing. */
function shape(answer: unknown, ...names: string[]): string {
  let text = JSON.stringify(answer);
  for (const n of names) text = text.replaceAll(n, '<name>');
  return text;
}

/** The lines of the log for each key, once a last refusal (by a key of its own) shows everything before it is written. */
async function linesByKey(keys: string[]): Promise<Array<Array<Record<string, unknown>>>> {
  const marker = await keyWith({ tools: ['billing.*'] });
  expect((await rpcCall(gw.url, marker, 'ai.listAllowedModels', {})).error?.data?.appCode).toBe('FORBIDDEN');
  const events = await waitFor(
    async () => {
      const text = await readFile(logFile, 'utf8').catch(() => '');
      const lines = text
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      return lines.some((e) => e.keyId === idOf[marker]) && lines;
    },
    { what: 'the last refusal in the security log' },
  );
  const text = await readFile(logFile, 'utf8');
  for (const key of Object.keys(idOf)) expect(text).not.toContain(key);
  expect(text).not.toContain(owner);
  return keys.map((k) => events.filter((e) => e.keyId === idOf[k]));
}

const line = (transport: string, rule: string, path: string) =>
  expect.objectContaining({ type: 'key_refused', reason: 'FORBIDDEN', rule, transport, path, sub: OWNER, ip: '127.0.0.1' });

describe('refusals of an API key answered as unknown, in the security log', () => {
  it("the MCP gateway: an upstream tool, prompt, resource, subscription and completion the key's tools rule refuses", async () => {
    const rule = { tools: ['every__echo'] };
    const [viaMcp, viaModern, viaRpc, viaTrpc, prompt, read, subscribe, completePrompt, completeTemplate] = await Promise.all(
      Array.from({ length: 9 }, () => keyWith(rule)),
    );
    const viaCallTool = await keyWith({ tools: ['call_tool', 'search_tools'] });

    // tools/call on a 2025 session (the SDK client), and a 2026-07-28 request: the unknown tool's protocol error.
    const client = await mcpClient(gw.url, viaMcp!);
    const refusedCall = await client.callTool({ name: 'every__get-sum', arguments: { a: 1, b: 2 } }).catch((e: unknown) => e);
    const missingCall = await client.callTool({ name: 'every__no-such-tool', arguments: { a: 1, b: 2 } }).catch((e: unknown) => e);
    await client.close();
    expect(String(refusedCall)).toContain('unknown tool');
    expect(shape(String(refusedCall), 'get-sum')).toBe(shape(String(missingCall), 'no-such-tool'));
    const modern = async (name: string) =>
      modernReply(
        await fetch(
          `${gw.url}/mcp`,
          modernPost(1, 'tools/call', { name, arguments: {} }, envelope2026('unknown-seclog'), { authorization: `Bearer ${viaModern}` }),
        ),
      );
    const refusedModern = await modern('every__get-sum');
    expect(refusedModern.error?.code).toBe(-32602);
    expect(shape(refusedModern, 'get-sum')).toBe(shape(await modern('every__no-such-tool'), 'no-such-tool'));

    // gateway.callTool on /rpc and /trpc: NOT_FOUND "unknown tool", its reason `unknown_tool`, not the key's rule.
    const rpc = (tool: string) => rpcCall(gw.url, viaRpc!, 'gateway.callTool', { server: 'every', tool, arguments: {} });
    const refusedRpc = (await rpc('get-sum')).error;
    expect(refusedRpc?.data).toMatchObject({ appCode: 'NOT_FOUND', details: { reason: 'unknown_tool' } });
    expect(shape(refusedRpc, 'get-sum')).toBe(shape((await rpc('no-such-tool')).error, 'no-such-tool'));
    const trpc = (tool: string) => callVia(gw, 'trpc', viaTrpc!, 'gateway.callTool', { server: 'every', tool, arguments: {} });
    const refusedTrpc = await trpc('get-sum');
    expect(refusedTrpc).toMatchObject({ ok: false, code: 'NOT_FOUND' });
    expect(shape(refusedTrpc, 'get-sum')).toBe(shape(await trpc('no-such-tool'), 'no-such-tool'));

    // call_tool naming a tool of a 'search' server the key's rule leaves out: the tool error it gives for an unknown tool.
    const viaSearch = await mcpClient(gw.url, viaCallTool);
    const callTool = (name: string) => viaSearch.callTool({ name: 'call_tool', arguments: { name, arguments: { a: 1, b: 2 } } });
    const refusedInner = await callTool('found__get-sum');
    expect(refusedInner.isError).toBe(true);
    expect(shape(refusedInner, 'get-sum')).toBe(shape(await callTool('found__no-such-tool'), 'no-such-tool'));
    await viaSearch.close();

    // prompts/get, resources/read, resources/subscribe and completion/complete: answered as unknown, as before.
    const unknownAlike = async (
      key: string,
      method: string,
      params: (name: string) => Record<string, unknown>,
      names: [string, string],
    ) => {
      const [refused, missing] = [
        (await (await session(key)).send(method, params(names[0]))).message,
        (await (await session(key)).send(method, params(names[1]))).message,
      ];
      expect(refused?.error, method).toBeDefined();
      expect(shape({ ...refused, id: 0 }, names[0]), method).toBe(shape({ ...missing, id: 0 }, names[1]));
    };
    await unknownAlike(prompt!, 'prompts/get', (name) => ({ name }), ['every__simple-prompt', 'every__no-such-prompt']);
    const NO_DOC = 'demo://resource/static/document/no-such.md';
    await unknownAlike(read!, 'resources/read', (uri) => ({ uri }), [DOC, NO_DOC]);
    await unknownAlike(subscribe!, 'resources/subscribe', (uri) => ({ uri }), [DOC, NO_DOC]);
    await unknownAlike(
      completePrompt!,
      'completion/complete',
      (name) => ({ ref: { type: 'ref/prompt', name }, argument: { name: 'department', value: '' } }),
      ['every__completable-prompt', 'every__no-such-prompt'],
    );
    await unknownAlike(
      completeTemplate!,
      'completion/complete',
      (uri) => ({ ref: { type: 'ref/resource', uri }, argument: { name: 'resourceId', value: '' } }),
      [UPSTREAM_TEMPLATE, 'demo://resource/dynamic/none/{resourceId}'],
    );

    const lines = await linesByKey([
      viaMcp!,
      viaModern!,
      viaCallTool,
      viaRpc!,
      viaTrpc!,
      prompt!,
      read!,
      subscribe!,
      completePrompt!,
      completeTemplate!,
    ]);
    expect(lines).toEqual([
      [line('mcp', 'key_tool_not_allowed', 'gateway.callTool')],
      [line('mcp', 'key_tool_not_allowed', 'gateway.callTool')],
      [line('mcp', 'key_tool_not_allowed', 'gateway.callTool')],
      [line('rpc', 'key_tool_not_allowed', 'gateway.callTool')],
      [line('trpc', 'key_tool_not_allowed', 'gateway.callTool')],
      [line('mcp', 'key_tool_not_allowed', 'every__simple-prompt')],
      [line('mcp', 'key_resource_not_allowed', DOC)],
      [line('mcp', 'key_resource_not_allowed', DOC)],
      [line('mcp', 'key_tool_not_allowed', 'every__completable-prompt')],
      [line('mcp', 'key_resource_not_allowed', UPSTREAM_TEMPLATE)],
    ]);
  });

  it('our own: completion/complete of a template and a prompt, resources/subscribe, subscriptions/listen, prompts/get', async () => {
    // Keys without the scope the weather procedures need, and keys whose tools rule leaves out the prompts' procedures.
    const [completeTemplate, subscribe, listen, completePrompt, getPrompt] = await Promise.all([
      keyWith({}),
      keyWith({}),
      keyWith({}),
      keyWith({ tools: ['billing.*'] }),
      keyWith({ tools: ['billing.*'] }),
    ]);
    const ownPrompt = gw.runtime.prompts.list().find((p) => p.procedure !== undefined)!;

    const templateAnswer = (
      await (
        await session(completeTemplate!)
      ).send('completion/complete', {
        ref: { type: 'ref/resource', uri: TEMPLATE },
        argument: { name: 'id', value: '' },
      })
    ).message;
    expect(templateAnswer?.error).toMatchObject({ code: -32602, message: expect.stringContaining('unknown resource template') });
    const subscribeAnswer = (await (await session(subscribe!)).send('resources/subscribe', { uri: 'weather://history' })).message;
    expect(subscribeAnswer?.error).toMatchObject({ code: -32602, data: { uri: 'weather://history' } });
    const promptAnswer = (
      await (
        await session(completePrompt!)
      ).send('completion/complete', {
        ref: { type: 'ref/prompt', name: ownPrompt.name },
        argument: { name: 'format', value: '' },
      })
    ).message;
    expect(promptAnswer?.error).toMatchObject({ code: -32602, message: expect.stringContaining('unknown prompt') });
    const gotPrompt = (await (await session(getPrompt!)).send('prompts/get', { name: ownPrompt.name, arguments: { code: 'x' } })).message;
    expect(gotPrompt?.error).toBeDefined();
    const stop = new AbortController();
    const listenRes = await fetch(`${gw.url}/mcp`, {
      ...modernPost(
        3,
        'subscriptions/listen',
        { notifications: { resourceSubscriptions: ['weather://history'] } },
        envelope2026('unknown-seclog'),
        {
          authorization: `Bearer ${listen}`,
        },
      ),
      signal: stop.signal,
    });
    try {
      expect((await modernReply(listenRes)).error).toMatchObject({ code: -32602, message: 'resource not found' });
    } finally {
      stop.abort();
    }

    const lines = await linesByKey([completeTemplate!, subscribe!, listen!, completePrompt!, getPrompt!]);
    expect(lines).toEqual([
      [line('mcp', 'key_resource_not_allowed', TEMPLATE)],
      [line('mcp', 'key_resource_not_allowed', 'weather://history')],
      [line('mcp', 'key_resource_not_allowed', 'weather://history')],
      [line('mcp', 'key_tool_not_allowed', ownPrompt.procedure!)],
      [line('mcp', 'key_tool_not_allowed', ownPrompt.procedure!)],
    ]);
  });
});
