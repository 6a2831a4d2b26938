import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { mintDevToken } from '@ai-backend/auth';
import { protectedProcedure, router } from '@ai-backend/core';
import { startTestServer, type TestServer } from './helpers/testServer.js';

const SECRET = 'p'.repeat(40);
/** A prompt backed by a protected procedure: only signed-in callers may render it. */
const team = router({
  briefing: protectedProcedure
    .meta({ description: 'Team briefing for the signed-in user', mcp: { prompt: true, tool: false } })
    .input(z.object({ topic: z.string() }))
    .query(({ ctx, input }) => ({ prompt: `Brief ${ctx.identity.sub} on ${input.topic}` })),
});

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ mcp: { auth: { authType: 'jwt' } }, jwt: { secret: SECRET }, customRouters: { team } });
});
afterAll(() => s.stop());

async function session(token?: string) {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    ...(token ? { authorization: `Bearer ${token}` } : {}),
  };
  const init = await s.fetch('/mcp', {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    }),
  });
  expect(init.status).toBe(200);
  await init.text();
  const h = { ...headers, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-06-18' };
  return (body: object) => s.fetch('/mcp', { method: 'POST', headers: h, body: JSON.stringify(body) });
}

describe('MCP prompts backed by protected procedures', () => {
  it('an anonymous prompts/get gets the 401 challenge; a signed-in caller gets the prompt', async () => {
    const anon = await session();
    const refused = await anon({ jsonrpc: '2.0', id: 1, method: 'prompts/get', params: { name: 'briefing', arguments: { topic: 'x' } } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer resource_metadata="/);

    const token = await mintDevToken({ secret: SECRET, sub: 'ada' });
    const signedIn = await session(token);
    const ok = await signedIn({
      jsonrpc: '2.0',
      id: 2,
      method: 'prompts/get',
      params: { name: 'briefing', arguments: { topic: 'launch' } },
    });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('Brief ada on launch');
  });
});

describe('MCP session binding', () => {
  it('an anonymous session is claimed by the first identity that uses it; others get 404', async () => {
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = await s.fetch('/mcp', {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    });
    await init.text();
    const sid = init.headers.get('mcp-session-id')!;
    const as = (token?: string) =>
      s.fetch('/mcp', {
        method: 'POST',
        headers: {
          ...headers,
          'mcp-session-id': sid,
          'mcp-protocol-version': '2025-06-18',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
    const ada = await mintDevToken({ secret: SECRET, sub: 'ada' });
    const eve = await mintDevToken({ secret: SECRET, sub: 'eve' });
    expect((await as()).status).toBe(200); // still anonymous: usable without a token
    expect((await as(ada)).status).toBe(200); // signed in on the same session: claimed by ada
    expect((await as(ada)).status).toBe(200);
    expect((await as(eve)).status).toBe(404);
    expect((await as()).status).toBe(404);
  });
});
