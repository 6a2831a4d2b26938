import { mintDevToken } from '@ai-backend/auth';
import { publicProcedure, router } from '@ai-backend/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { rpcCall } from './helpers/aiGateway.js';
import { envelope2026, modernPost, modernReply } from './helpers/mcpWire.js';
import { RawMcp } from './helpers/rawMcp.js';
import { startTestServer, type TestServer } from './helpers/testServer.js';

/**
 * A resource an API key may not read (its procedure's keyAccess, the key's scopes or tools rule)
 * is unknown to that key everywhere MCP names it, as resources/list and resources/read already
 * treat it: a 2025 session's resources/subscribe (which told the key each time the resource
 * changed) and completion/complete of a template's variables (which gave it the values the
 * template offers) answer it as an unknown resource. A key that may read it is served as before.
 */
const SECRET = 'mcp-key-resource-reach-secret-0123456789ab';
const weather = router({
  history: publicProcedure
    .meta({
      description: 'Saved forecasts',
      keyAccess: { scope: 'weather:write' },
      mcp: { tool: false, resource: { uri: 'weather://history', mimeType: 'application/json' } },
    })
    .query(() => ({ days: 3 })),
  stationInfo: publicProcedure
    .meta({
      description: 'A station',
      keyAccess: { scope: 'weather:write' },
      mcp: { tool: false, resource: { uriTemplate: 'weather://stations/{id}' } },
    })
    .input(z.object({ id: z.string() }))
    .query(({ input }) => input.id),
});
const TEMPLATE = 'weather://stations/{id}';
let s: TestServer;
let owner: string;

beforeAll(async () => {
  s = await startTestServer({
    jwt: { secret: SECRET },
    mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: false } },
    customRouters: { weather },
  });
  // The station names the template offers: what an operator's code would give it.
  const { resources } = await s.server.ready();
  const template = resources.getTemplate(TEMPLATE)!;
  resources.registerTemplate({ ...template, complete: () => ['oslo-private', 'bergen-private'] });
  owner = await mintDevToken({ secret: SECRET, sub: 'reach-owner', scopes: ['mcp'] });
});
afterAll(() => s?.stop());

async function keyWith(rules: Record<string, unknown>): Promise<string> {
  const made = await rpcCall(s.url, owner, 'keys.create', { name: 'reach', ...rules });
  if (!made.result) throw new Error(made.text);
  return made.result.key as string;
}

async function sessionFor(credential: string): Promise<RawMcp> {
  const mcp = new RawMcp(s.url, credential);
  expect((await mcp.initialize()).status).toBe(200);
  return mcp;
}

const complete = (mcp: RawMcp) =>
  mcp.send('completion/complete', { ref: { type: 'ref/resource', uri: TEMPLATE }, argument: { name: 'id', value: '' } });

describe('a resource a key may not read is unknown to it', () => {
  it('resources/subscribe', async () => {
    for (const key of [await keyWith({}), await keyWith({ scopes: ['weather:write'], tools: ['weather.stationInfo'] })]) {
      const refused = await (await sessionFor(key)).send('resources/subscribe', { uri: 'weather://history' });
      expect(refused.message?.error).toMatchObject({ code: -32602, data: { uri: 'weather://history' } });
    }
    const allowed = await (await sessionFor(await keyWith({ scopes: ['weather:write'] }))).send('resources/subscribe', {
      uri: 'weather://history',
    });
    expect(allowed.message?.result).toEqual({});
    expect((await (await sessionFor(owner)).send('resources/subscribe', { uri: 'weather://history' })).message?.result).toEqual({});
  });

  it("completion/complete of a template's variables", async () => {
    const refused = await complete(await sessionFor(await keyWith({})));
    expect(refused.message?.error?.code).toBe(-32602);
    expect(JSON.stringify(refused.message)).not.toContain('private');
    for (const credential of [await keyWith({ scopes: ['weather:write'] }), owner]) {
      const served = await complete(await sessionFor(credential));
      expect(served.message?.result?.completion?.values).toEqual(['oslo-private', 'bergen-private']);
    }
  });

  it('a 2026-07-28 subscriptions/listen naming it', async () => {
    const listen = (credential: string, signal?: AbortSignal) =>
      fetch(`${s.url}/mcp`, {
        ...modernPost(
          3,
          'subscriptions/listen',
          { notifications: { resourceSubscriptions: ['weather://history'] } },
          envelope2026('reach'),
          {
            authorization: `Bearer ${credential}`,
          },
        ),
        ...(signal ? { signal } : {}),
      });
    const stopRefused = new AbortController();
    const refusedRes = await listen(await keyWith({}), stopRefused.signal);
    try {
      // An answer, not a stream that would tell the key each change.
      expect(refusedRes.headers.get('content-type')).toContain('application/json');
      expect((await modernReply(refusedRes)).error?.code).toBe(-32602);
    } finally {
      stopRefused.abort();
    }
    // A key that may read it, and the owner, get the stream (closed here once it opened).
    for (const credential of [await keyWith({ scopes: ['weather:write'] }), owner]) {
      const stop = new AbortController();
      const open = await listen(credential, stop.signal);
      expect(open.status).toBe(200);
      expect(open.headers.get('content-type')).toContain('text/event-stream');
      stop.abort();
      await open.body?.cancel().catch(() => undefined);
    }
  });
});
