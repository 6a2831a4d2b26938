/**
 * An upstream whose prompts/list or resources/list fails when the gateway connects (a busy or
 * still-starting server, a timeout) is listed again later, with the connect's backoff: its
 * prompts and resources reach clients without a reconnect and without the upstream announcing a
 * change. Before, the gateway listed none of them until the connection was replaced, which for a
 * healthy upstream is never. The upstream is a raw script (helpers/flakyListsUpstream.mjs) over
 * stdio; the caller is the real MCP SDK client on /mcp.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { mcpClient } from './helpers/aiGateway.js';
import { startScriptUpstreamGateway, type ScriptUpstreamGateway } from './helpers/scriptUpstreamGateway.js';

let gw: ScriptUpstreamGateway;

beforeAll(async () => {
  gw = await startScriptUpstreamGateway({
    // Fails each list once (retried after about 1 s), and twice (then 1 s and 2 s more).
    once: { script: 'flakyListsUpstream.mjs', args: ['1'] },
    twice: { script: 'flakyListsUpstream.mjs', args: ['2'] },
  });
}, 60_000);

afterAll(async () => {
  await gw?.stop();
});

it("an upstream's prompts and resources that failed to list at connect are listed again, without a reconnect", async () => {
  const client = await mcpClient(gw.url);
  try {
    const pids = gw.runtime.gateway.status().map((s) => s.pid);
    await expect
      .poll(
        async () => {
          const [prompts, resources] = await Promise.all([client.listPrompts(), client.listResources()]);
          return {
            prompts: prompts.prompts
              .map((p) => p.name)
              .filter((n) => n.endsWith('__hello'))
              .sort(),
            resources: resources.resources
              .map((r) => r.uri)
              .filter((u) => u.startsWith('flaky://'))
              .sort(),
          };
        },
        { timeout: 15_000, interval: 250 },
      )
      .toEqual({ prompts: ['once__hello', 'twice__hello'], resources: ['flaky://notes/1', 'flaky://notes/2'] });
    // Served by the same upstream processes: listed again, not reconnected.
    expect(gw.runtime.gateway.status().map((s) => s.pid)).toEqual(pids);
    const got = await client.getPrompt({ name: 'twice__hello' });
    expect(got.messages[0]?.content).toMatchObject({ text: 'hello' });
    const read = await client.readResource({ uri: 'flaky://notes/2' });
    expect(read.contents[0]).toMatchObject({ text: 'the notes' });
  } finally {
    await client.close();
  }
}, 30_000);
