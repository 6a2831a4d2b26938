import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { mintDevToken } from '@ai-backend/auth';
import { publicProcedure, router } from '@ai-backend/core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpcCall, trpcClient } from './helpers/aiGateway.js';
import { startTestServer, type TestServer } from './helpers/testServer.js';

/**
 * An API key reads only the resources its rules admit, whatever serves them: a procedure's
 * resource by that procedure's rules, a resource of the config file (`https://`, here an
 * `http://` origin on loopback that the test serves, and an `https://` one that is never
 * fetched) by its URI in the key's tools rule. The same on MCP (official SDK client:
 * resources/list, templates/list, read, subscribe) and on /rpc (mcp.getResources,
 * mcp.readResource): what the key may not read is not listed, and reading it is answered exactly
 * as a resource that does not exist; the refusal is one line of the security log.
 */
const SECRET = 'api-keys-resources-secret-0123456789abcdef';
const HANDBOOK = 'https://docs.example.invalid/handbook.md';
const weather = router({
  history: publicProcedure
    .meta({ description: 'Saved forecasts', keyAccess: 'any', mcp: { tool: false, resource: { uri: 'weather://history' } } })
    .query(() => 'three sunny days'),
});

let origin: Server;
let web = '';
let dir: string;
let logFile: string;
let s: TestServer;
let owner: string;
const opened: Client[] = [];

beforeAll(async () => {
  origin = createHttpServer((req, res) => {
    const item = /^\/items\/([^/]+)$/.exec(req.url ?? '');
    if (item) return res.writeHead(200, { 'content-type': 'text/plain' }).end(`item ${item[1]}`);
    if (req.url === '/public.md' || req.url === '/private.md')
      return res.writeHead(200, { 'content-type': 'text/markdown' }).end(`# ${req.url.slice(1)}`);
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
  web = `http://127.0.0.1:${(origin.address() as AddressInfo).port}`;
  dir = await mkdtemp(path.join(tmpdir(), 'key-res-'));
  logFile = path.join(dir, 'security.log');
  s = await startTestServer({
    jwt: { secret: SECRET },
    mcp: {
      auth: { authType: 'jwt' },
      rateLimiting: { enabled: false },
      securityLogging: { enabled: true, logLevel: 'warn', logToFile: true, logFilePath: logFile },
    },
    customRouters: { weather },
    resources: {
      list: [
        { uri: `${web}/public.md`, name: 'public-doc' },
        { uri: `${web}/private.md`, name: 'private-doc' },
        { uri: HANDBOOK, name: 'handbook' },
      ],
      templates: [{ uriTemplate: `${web}/items/{id}`, name: 'item' }],
      fetch: { allowPrivateNetwork: true },
    },
  });
  owner = await mintDevToken({ secret: SECRET, sub: 'res-owner', scopes: ['mcp'] });
});
afterAll(async () => {
  for (const c of opened) await c.close().catch(() => undefined);
  await s?.stop();
  await new Promise<void>((r) => origin.close(() => r()));
  await rm(dir, { recursive: true, force: true });
});

async function keyWith(rules: Record<string, unknown>): Promise<string> {
  const made = await rpcCall(s.url, owner, 'keys.create', { name: 'res', ...rules });
  if (!made.result) throw new Error(made.text);
  return made.result.key as string;
}

async function mcpFor(credential: string): Promise<Client> {
  const client = new Client({ name: 'key-res', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${credential}` } } }),
  );
  opened.push(client);
  return client;
}

/** The error an MCP request got (code and message), or 'ok'. */
async function mcpError(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => 'ok',
    (e: { code?: number; message?: string }) => ({ code: e.code, message: e.message?.replace(/\S+(\/|:)\S+/g, 'URI') }),
  );
}

/** The error of an /rpc call (code, message, data), or its result. */
async function rpcAnswer(credential: string, method: string, params: unknown): Promise<unknown> {
  const r = await rpcCall(s.url, credential, method, params);
  return r.error ? { code: r.error.code, message: r.error.message, appCode: r.error.data?.appCode } : r.result;
}

describe('an API key reads only the resources its rules admit, whatever serves them', () => {
  it('MCP: listed, templates, read, subscribe', async () => {
    const allowed = [`${web}/public.md`, 'weather://history'];
    const narrow = await mcpFor(await keyWith({ tools: [`${web}/public.md`, 'weather.history'] }));
    expect((await narrow.listResources()).resources.map((r) => r.uri).sort()).toEqual(allowed.sort());
    expect((await narrow.listResourceTemplates()).resourceTemplates).toEqual([]);
    expect((await narrow.readResource({ uri: `${web}/public.md` })).contents[0]).toMatchObject({ text: '# public.md' });
    expect((await narrow.readResource({ uri: 'weather://history' })).contents[0]).toMatchObject({ text: 'three sunny days' });
    const unknown = await mcpError(narrow.readResource({ uri: `${web}/nothing-here.md` }));
    expect(unknown).toMatchObject({ code: -32602 });
    for (const uri of [`${web}/private.md`, HANDBOOK, `${web}/items/7`]) {
      expect(await mcpError(narrow.readResource({ uri })), uri).toEqual(unknown);
      expect(await mcpError(narrow.subscribeResource({ uri })), uri).toEqual(unknown);
    }

    // Completion of a template or a resource the key may not read: unknown to it too.
    const complete = (client: Client, uri: string) =>
      client.complete({ ref: { type: 'ref/resource', uri }, argument: { name: 'id', value: '' } });
    for (const uri of [`${web}/items/{id}`, HANDBOOK]) expect(await mcpError(complete(narrow, uri)), uri).toMatchObject({ code: -32602 });
    expect((await complete(narrow, `${web}/public.md`)).completion.values).toEqual([]);

    // A glob over URIs admits a template and what it serves; a procedure's resource follows its procedure.
    const items = await mcpFor(await keyWith({ tools: [`${web}/items/*`] }));
    expect((await items.listResources()).resources).toEqual([]);
    expect((await items.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate)).toEqual([`${web}/items/{id}`]);
    expect((await items.readResource({ uri: `${web}/items/7` })).contents[0]).toMatchObject({ text: 'item 7' });
    expect(await mcpError(items.readResource({ uri: 'weather://history' }))).toEqual(unknown);
    expect((await complete(items, `${web}/items/{id}`)).completion.values).toEqual([]);

    // No tools rule, and the owner signed in: everything, as before.
    for (const credential of [await keyWith({}), owner]) {
      const all = await mcpFor(credential);
      expect((await all.listResources()).resources).toHaveLength(4);
      expect((await all.readResource({ uri: `${web}/private.md` })).contents[0]).toMatchObject({ text: '# private.md' });
    }
  });

  it('/rpc and /trpc: mcp.getResources and mcp.readResource', async () => {
    const key = await keyWith({ tools: [`${web}/public.md`, 'weather.history', 'mcp.getResources', 'mcp.readResource'] });
    expect(((await rpcAnswer(key, 'mcp.getResources', {})) as { resources: string[] }).resources.sort()).toEqual(
      [`${web}/public.md`, 'weather://history'].sort(),
    );
    expect(await rpcAnswer(key, 'mcp.readResource', { uri: `${web}/public.md` })).toMatchObject({ content: '# public.md' });
    expect(await rpcAnswer(key, 'mcp.readResource', { uri: 'weather://history' })).toMatchObject({ content: 'three sunny days' });
    const unknown = await rpcAnswer(key, 'mcp.readResource', { uri: `${web}/nothing-here.md` });
    expect(unknown).toMatchObject({ appCode: 'NOT_FOUND' });
    for (const uri of [`${web}/private.md`, HANDBOOK, `${web}/items/7`])
      expect(await rpcAnswer(key, 'mcp.readResource', { uri }), uri).toEqual(unknown);
    // /trpc (the tRPC client): the same procedure, the same answers.
    const trpc = trpcClient(s.url, key);
    const trpcError = (uri: string) =>
      trpc.mcp.readResource.query({ uri }).then(
        () => 'ok',
        (e: { data?: { code?: string }; message?: string }) => ({ code: e.data?.code, message: e.message }),
      );
    const trpcUnknown = await trpcError(`${web}/nothing-here.md`);
    expect(trpcUnknown).toMatchObject({ code: 'NOT_FOUND' });
    for (const uri of [`${web}/private.md`, HANDBOOK]) expect(await trpcError(uri), uri).toEqual(trpcUnknown);
    expect((await trpc.mcp.getResources.query({})).resources.sort()).toEqual([`${web}/public.md`, 'weather://history'].sort());
    // The owner reads them all.
    expect(((await rpcAnswer(owner, 'mcp.getResources', {})) as { resources: string[] }).resources).toHaveLength(4);
    expect(await rpcAnswer(owner, 'mcp.readResource', { uri: `${web}/private.md` })).toMatchObject({ content: '# private.md' });
  });

  it('each refused read is a key_refused line of the security log, without the key', async () => {
    const key = await keyWith({ tools: ['mcp.readResource'] });
    await rpcAnswer(key, 'mcp.readResource', { uri: HANDBOOK });
    await s.stop(); // flushes the file
    const text = await readFile(logFile, 'utf8');
    expect(text).not.toContain(key);
    const events = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(events).toContainEqual(
      expect.objectContaining({
        type: 'key_refused',
        rule: 'key_resource_not_allowed',
        transport: 'rpc',
        path: HANDBOOK,
        sub: 'res-owner',
      }),
    );
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'key_refused', rule: 'key_resource_not_allowed', transport: 'mcp', path: `${web}/private.md` }),
    );
  });
});
