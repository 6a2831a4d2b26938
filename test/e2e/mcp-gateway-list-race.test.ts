/**
 * A list_changed heard while the gateway's connect is still listing (server-everything sends
 * tools/list_changed as soon as it is initialized) must not undo the connect's lists. The refresh
 * spread the lists it found before awaiting its own (none, during a connect) and wrote them back
 * after the connect's: the upstream's prompts and resources vanished, its tools stayed, and the
 * status said ready. On a loaded machine this hit server-everything in several gateway suites. The
 * upstream here makes the order certain (helpers/listChangedAtConnect.mjs); the caller is the real
 * MCP SDK client on /mcp.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { mcpClient } from './helpers/aiGateway.js';
import { startScriptUpstreamGateway, type ScriptUpstreamGateway } from './helpers/scriptUpstreamGateway.js';

let gw: ScriptUpstreamGateway;

beforeAll(async () => {
  gw = await startScriptUpstreamGateway({ race: { script: 'listChangedAtConnect.mjs' } });
}, 60_000);

afterAll(async () => {
  await gw?.stop();
});

it("a tools/list_changed during the connect's listing keeps the upstream's prompts and resources", async () => {
  const client = await mcpClient(gw.url);
  try {
    // The refresh's tools/list is answered 1 s after it was asked: wait past it on purpose
    // (nothing to await from outside), then the lists must still hold the connect's prompts and resources.
    await new Promise((r) => setTimeout(r, 2_500));
    const [{ prompts }, { resources }, { tools }] = await Promise.all([client.listPrompts(), client.listResources(), client.listTools()]);
    expect(prompts.map((p) => p.name)).toContain('race__hello');
    expect(resources.map((r) => r.uri)).toContain('race://notes');
    expect(tools.map((t) => t.name)).toContain('race__ping');
  } finally {
    await client.close();
  }
}, 30_000);
