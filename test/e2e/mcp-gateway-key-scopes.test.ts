/**
 * A server's `allowScopes` through an API key (docs/mcp-gateway.md, "Permissions"): a key reaches
 * such a server only while its owner does, whatever scopes the key itself holds. Credential ×
 * entry point (/rpc gateway.listServers, listTools and callTool; MCP tools/list, tools/call,
 * prompts/list). Before, a key's own scope list decided: a key kept the server after its owner
 * lost the scope (their next sign-in carried it no more), and a key scope, which an owner may give
 * any key without holding it, opened a server to the key of an owner who could not use it.
 */
import { randomUUID } from 'node:crypto';
import { mintDevToken } from '@ai-backend/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawMcp } from './helpers/rawMcp.js';
import { JWT_SECRET, createTestUpstream, rpcCall, startAiServer, type AiServer, type TestUpstream } from './helpers/aiGateway.js';
import { EVERYTHING, waitForUpstreams } from './helpers/mcpUpstreams.js';

let upstream: TestUpstream;
let gw: AiServer;
const run = randomUUID().slice(0, 8);
/** An IdP scope, and a built-in key scope an operator happens to name in allowScopes too. */
const IDP_SCOPE = 'every:use';
const KEY_SCOPE = 'files:write';

beforeAll(async () => {
  upstream = await createTestUpstream();
  gw = await startAiServer(upstream, {
    mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: false } },
    mcpServers: {
      every: { command: process.execPath, args: [EVERYTHING, 'stdio'], timeoutMs: 10_000, allowScopes: [IDP_SCOPE, KEY_SCOPE] },
    },
  });
  await waitForUpstreams(gw.runtime);
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
});

/** A sign-in of `sub` carrying `scopes`; the directory keeps what it carried (as every request notes it). */
async function signIn(sub: string, scopes: string[]): Promise<string> {
  const token = await mintDevToken({ secret: JWT_SECRET, sub, scopes: ['mcp', ...scopes] });
  expect((await rpcCall(gw.url, token, 'billing.getTokenBalance')).result).toBeDefined();
  await gw.runtime.users.settled();
  return token;
}

async function keyOf(owner: string, scopes: string[]): Promise<string> {
  const made = await rpcCall<{ key: string }>(gw.url, owner, 'keys.create', { name: `scopes ${scopes.join(' ')}`, scopes });
  if (!made.result) throw new Error(`keys.create failed: ${made.text}`);
  return made.result.key;
}

/** What a credential reaches of the server on every entry point: true where it reaches it. */
async function reach(credential: string): Promise<Record<string, boolean>> {
  const servers = await rpcCall<Array<{ name: string }>>(gw.url, credential, 'gateway.listServers');
  const tools = await rpcCall<Array<{ name: string }>>(gw.url, credential, 'gateway.listTools');
  const called = await rpcCall(gw.url, credential, 'gateway.callTool', { server: 'every', tool: 'echo', arguments: { message: 'hi' } });
  const mcp = new RawMcp(gw.url, credential);
  expect((await mcp.initialize()).status).toBe(200);
  const listed = ((await mcp.listTools()).message?.result?.tools ?? []) as Array<{ name: string }>;
  const call = await mcp.callTool('every__echo', { message: 'hi' });
  const prompts = ((await mcp.send('prompts/list', {})).message?.result?.prompts ?? []) as Array<{ name: string }>;
  return {
    'rpc listServers': JSON.stringify(servers.result ?? servers.text).includes('"every"'),
    'rpc listTools': JSON.stringify(tools.result ?? tools.text).includes('every__echo'),
    'rpc callTool': called.result !== undefined && JSON.stringify(called.result).includes('hi'),
    'mcp tools/list': listed.some((t) => t.name === 'every__echo'),
    'mcp tools/call': call.message?.result !== undefined && call.message.result.isError !== true,
    'mcp prompts/list': prompts.some((p) => p.name.startsWith('every__')),
  };
}

const everywhere = (v: boolean) =>
  Object.fromEntries(
    ['rpc listServers', 'rpc listTools', 'rpc callTool', 'mcp tools/list', 'mcp tools/call', 'mcp prompts/list'].map((k) => [k, v]),
  );

describe("MCP gateway: allowScopes through an API key follows its owner's scopes", () => {
  it("a key holding the scope reaches the server while its owner holds it, and not after the owner's next sign-in without it", async () => {
    const sub = `scoped-${run}`;
    const owner = await signIn(sub, [IDP_SCOPE]);
    expect(await reach(owner)).toEqual(everywhere(true));
    const key = await keyOf(owner, [IDP_SCOPE]);
    expect(await reach(key)).toEqual(everywhere(true));
    // The owner's identity provider no longer grants the scope: their next token lacks it.
    const demoted = await signIn(sub, []);
    expect(await reach(demoted)).toEqual(everywhere(false));
    expect(await reach(key)).toEqual(everywhere(false));
  });

  it('a key scope named in allowScopes does not open the server to a key whose owner cannot use it', async () => {
    const owner = await signIn(`plain-${run}`, []);
    expect(await reach(owner)).toEqual(everywhere(false));
    // files:write is a key scope: the owner may give it without holding it.
    const key = await keyOf(owner, [KEY_SCOPE]);
    expect(await reach(key)).toEqual(everywhere(false));
    // An owner who holds it (a token carrying it) and gives it: the key reaches the server.
    const holder = await signIn(`holder-${run}`, [KEY_SCOPE]);
    expect(await reach(await keyOf(holder, [KEY_SCOPE]))).toEqual(everywhere(true));
  });
});
