// @every-node: CI runs this file on every Node version it tests (docs/testing.md, "CI: phases and times").
/**
 * Embedding the MCP endpoint in one's own Hono app through the public entry point only: the
 * handler is built from what `server.ready()` resolves to (AiBackendServices), never from the
 * internal runtime, and serves the server's tools, run-time prompts and auth rules at the app's path.
 */
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { serve, type ServerType } from '@hono/node-server';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Hono } from 'hono';
import { createMcpHandler, createServer, MemoryStorage, type AiBackendServer, type EmbeddedMcpHandler } from 'ai-backend';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const SECRET = 'an-embedded-test-secret-of-32-bytes!';

async function listen(app: Hono): Promise<{ http: ServerType; url: string }> {
  const http = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
  await once(http, 'listening');
  return { http, url: `http://127.0.0.1:${(http.address() as AddressInfo).port}` };
}

describe('createMcpHandler: the MCP endpoint in a plain Hono app', () => {
  let backend: AiBackendServer;
  let mcp: EmbeddedMcpHandler;
  let http: ServerType;
  let url: string;

  beforeAll(async () => {
    backend = createServer(
      { port: 0, mcp: { auth: { authType: 'jwt', publicTools: ['greeting'] } }, jwt: { secret: SECRET } },
      { storage: new MemoryStorage() },
    );
    const services = await backend.ready();
    services.prompts.register({
      name: 'app-prompt',
      description: 'registered by the app at run time',
      get: () => ({ messages: [{ role: 'user', content: { type: 'text', text: 'from the app' } }] }),
    });
    mcp = await createMcpHandler(services, { sessionIdleMs: 60_000 });
    const app = new Hono();
    app.get('/', (c) => c.text('my app'));
    app.all('/tools/mcp', mcp.handle);
    ({ http, url } = await listen(app));
  });
  afterAll(async () => {
    await mcp?.close();
    http?.close();
    await backend?.stop();
  });

  it("serves the server's tools and the app's run-time prompt at the app's path", async () => {
    const client = new Client({ name: 'embedder', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/tools/mcp`)));
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('greeting');
      const called = await client.callTool({ name: 'greeting', arguments: { name: 'Ann', language: 'fr' } });
      expect(JSON.stringify(called.content)).toContain('Bonjour, Ann!');
      expect((await client.listPrompts()).prompts.map((p) => p.name)).toContain('app-prompt');
      expect(mcp.sessionCount).toBe(1);
    } finally {
      await client.close();
    }
    expect(await (await fetch(url)).text()).toBe('my app');
  });

  it("keeps the server's auth rules: a tool that is not public needs a token, and the answer is the MCP challenge", async () => {
    const client = new Client({ name: 'embedder', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/tools/mcp`)));
    try {
      const refused = await client.callTool({ name: 'ping', arguments: {} }).catch((err: unknown) => err);
      expect(refused).toMatchObject({ code: 401, message: expect.stringContaining('authentication required for this tool') });
    } finally {
      await client.close().catch(() => undefined);
    }
  });

  it('refuses anything but the services of a server, with a clear error', async () => {
    const fake = { storage: new MemoryStorage(), prompts: {}, resources: {} } as never;
    await expect(createMcpHandler(fake)).rejects.toThrow('not the services of an ai-backend server (server.ready())');
  });
});
