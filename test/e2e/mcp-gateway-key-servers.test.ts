/**
 * gateway.listServers through an API key with a `tools` rule (docs/mcp-gateway.md,
 * "Permissions"): a key reaches nothing of a server its rule leaves out (tools/list, prompts/list,
 * resources/list show it none of it), and the server list no longer names such a server either;
 * it named every server the key's owner may use, with its tool count.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUpstream, rpcCall, startAiServer, tokenFor, type AiServer, type TestUpstream } from './helpers/aiGateway.js';
import { EVERYTHING, waitForUpstreams } from './helpers/mcpUpstreams.js';

let upstream: TestUpstream;
let gw: AiServer;
let user: string;
const run = randomUUID().slice(0, 8);

beforeAll(async () => {
  upstream = await createTestUpstream();
  gw = await startAiServer(upstream, {
    mcp: { auth: { authType: 'jwt' } },
    mcpServers: {
      every: { command: process.execPath, args: [EVERYTHING, 'stdio'], timeoutMs: 10_000 },
      other: { command: process.execPath, args: [EVERYTHING, 'stdio'], timeoutMs: 10_000 },
    },
  });
  user = await tokenFor(`gwkeysrv-${run}`);
  await waitForUpstreams(gw.runtime);
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
});

async function serversSeenWith(tools?: string[]): Promise<string[]> {
  let credential = user;
  if (tools) {
    const made = await rpcCall<{ key: string }>(gw.url, user, 'keys.create', { name: `tools ${tools.join(' ')}`, tools });
    if (!made.result) throw new Error(`keys.create failed: ${made.text}`);
    credential = made.result.key;
  }
  return (await listedWith(credential)).map((s) => s.name).sort();
}

async function listedWith(credential: string): Promise<Array<{ name: string; tools: number }>> {
  const listed = await rpcCall<{ servers: Array<{ name: string; tools: number }> }>(gw.url, credential, 'gateway.listServers');
  return listed.result!.servers;
}

async function keyWith(tools: string[]): Promise<string> {
  const made = await rpcCall<{ key: string }>(gw.url, user, 'keys.create', { name: `count ${tools.join(' ')}`, tools });
  if (!made.result) throw new Error(`keys.create failed: ${made.text}`);
  return made.result.key;
}

describe("gateway.listServers through an API key's tools rule", () => {
  it('the owner, and a key without a tools rule, see every server', async () => {
    expect(await serversSeenWith()).toEqual(['every', 'other']);
  });

  it('a key naming one tool, or one prompt, of a server sees that server only', async () => {
    expect(await serversSeenWith(['every__echo'])).toEqual(['every']);
    expect(await serversSeenWith(['other__simple-prompt'])).toEqual(['other']);
    expect(await serversSeenWith(['every__get-*', 'generateText'])).toEqual(['every']);
  });

  it('a key admitting whole servers sees them; one naming none of their tools sees none', async () => {
    expect(await serversSeenWith(['*'])).toEqual(['every', 'other']);
    expect(await serversSeenWith(['other__*'])).toEqual(['other']);
    expect(await serversSeenWith(['generateText'])).toEqual([]);
  });

  it("a server's tool count is of the tools the caller is shown: a narrowed key is not told how many its owner reaches", async () => {
    const all = (await listedWith(user)).find((s) => s.name === 'every')!.tools;
    expect(all).toBeGreaterThan(3);
    const one = (await listedWith(await keyWith(['every__echo']))).find((s) => s.name === 'every')!;
    expect(one.tools).toBe(1);
    const some = (await listedWith(await keyWith(['every__get-*', 'every__echo']))).find((s) => s.name === 'every')!;
    expect(some.tools).toBeGreaterThan(1);
    expect(some.tools).toBeLessThan(all);
    expect((await listedWith(await keyWith(['every__*']))).find((s) => s.name === 'every')!.tools).toBe(all);
  });
});
