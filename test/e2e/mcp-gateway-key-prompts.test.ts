/**
 * An API key's `tools` rule covers what a key reaches of an upstream MCP server beyond its tools
 * (docs/mcp-gateway.md, "Permissions"): upstream prompts are matched by their names as clients
 * see them (`<server>__<prompt>`), as tools are, and upstream resources, which keep their own
 * URIs, only through a key whose rule admits the whole server (`<server>__*`). A key limited to
 * `every__echo` had listed and read every prompt and resource of every server its owner may use.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUpstream, mcpClient, rpcCall, startAiServer, tokenFor, type AiServer, type TestUpstream } from './helpers/aiGateway.js';
import { EVERYTHING, waitForUpstreams } from './helpers/mcpUpstreams.js';

let upstream: TestUpstream;
let gw: AiServer;
let user: string;
const run = randomUUID().slice(0, 8);
const DOC_PREFIX = 'demo://resource/static/document/';

beforeAll(async () => {
  upstream = await createTestUpstream();
  gw = await startAiServer(upstream, {
    mcp: { auth: { authType: 'jwt' } },
    mcpServers: { every: { command: process.execPath, args: [EVERYTHING, 'stdio'], timeoutMs: 10_000 } },
  });
  user = await tokenFor(`gwkey-${run}`);
  await waitForUpstreams(gw.runtime);
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
});

async function keyWith(tools: string[]): Promise<string> {
  const made = await rpcCall<{ key: string }>(gw.url, user, 'keys.create', { name: `tools ${tools.join(' ')}`, tools });
  if (!made.result) throw new Error(`keys.create failed: ${made.text}`);
  return made.result.key;
}

/** What a credential sees and gets of the upstream's prompts and resources over MCP. */
async function reach(credential: string) {
  const client = await mcpClient(gw.url, credential);
  try {
    const prompts = (await client.listPrompts()).prompts.map((p) => p.name).filter((n) => n.startsWith('every__'));
    const got = await client.getPrompt({ name: 'every__simple-prompt', arguments: {} }).then(
      () => 'served',
      () => 'refused',
    );
    const docs = (await client.listResources()).resources.filter((r) => r.uri.startsWith(DOC_PREFIX)).map((r) => r.uri);
    const read = await client.readResource({ uri: `${DOC_PREFIX}architecture.md` }).then(
      (r) => (JSON.stringify(r.contents).length > 20 ? 'served' : 'empty'),
      () => 'refused',
    );
    return { prompts: prompts.length > 0, got, docs: docs.length > 0, read };
  } finally {
    await client.close();
  }
}

describe("MCP gateway: an API key's tools rule over upstream prompts and resources", () => {
  it('the owner without a key reaches them all', async () => {
    expect(await reach(user)).toEqual({ prompts: true, got: 'served', docs: true, read: 'served' });
  });

  it('a key naming one upstream tool reaches no prompt or resource of that server', async () => {
    expect(await reach(await keyWith(['every__echo']))).toEqual({ prompts: false, got: 'refused', docs: false, read: 'refused' });
  });

  it("a key naming the server's prompt reaches that prompt, not the resources", async () => {
    expect(await reach(await keyWith(['every__simple-prompt']))).toEqual({ prompts: true, got: 'served', docs: false, read: 'refused' });
  });

  it('a key admitting the whole server reaches its prompts and resources', async () => {
    expect(await reach(await keyWith(['every__*']))).toEqual({ prompts: true, got: 'served', docs: true, read: 'served' });
  });
});
