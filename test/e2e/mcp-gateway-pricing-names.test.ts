/**
 * Pricing (docs/mcp-gateway.md, "Pricing and limits"): `pricing.tools[<upstream tool name>]`,
 * else `pricing.tokensPerCall`. An upstream's tool may be named like a property every JavaScript
 * object has (`toString`, `constructor`): it is priced like any other name, never free.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestUpstream,
  creditTokens,
  REQUEST_ID_V7,
  rpcCall,
  startAiServer,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';
import { startTrickyUpstream, type TrickyUpstream } from './helpers/trickyMcpUpstream.js';
import { waitForUpstreams } from './helpers/mcpUpstreams.js';

const PRICE = 100;
/** The price plus the helpers' 10 % platform fee. */
const CHARGED = 110;

let ai: TestUpstream;
let tricky: TrickyUpstream;
let gw: AiServer;
let admin: string;
const run = randomUUID().slice(0, 8);

beforeAll(async () => {
  ai = await createTestUpstream({ outputTokens: 8 });
  tricky = await startTrickyUpstream();
  gw = await startAiServer(ai, {
    mcp: { auth: { authType: 'jwt' } },
    gateway: { allowPrivateNetwork: true },
    mcpServers: {
      paid: { type: 'http', url: tricky.url, pricing: { tokensPerCall: PRICE } },
      perTool: { type: 'http', url: tricky.url, pricing: { tools: { echo: 1, toString: PRICE } } },
    },
  });
  admin = await tokenFor(`gwprice-${run}-admin`, { admin: true });
  await waitForUpstreams(gw.runtime);
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await tricky?.stop();
  await ai?.close();
});

describe('MCP gateway: pricing by upstream tool name', () => {
  it('tools named toString or constructor cost tokensPerCall (or their own price), like any tool', async () => {
    const sub = `gwprice-${run}-user`;
    const token = await tokenFor(sub);
    await creditTokens(gw.url, admin, sub, 10_000, `seed-${sub}`);
    const balance = async () => (await gw.runtime.billing.balances(sub)).subscription;
    const call = (server: string, tool: string) => rpcCall(gw.url, token, 'gateway.callTool', { server, tool, arguments: {} });

    let before = await balance();
    for (const [server, tool] of [
      ['paid', 'echo'],
      ['paid', 'toString'],
      ['paid', 'constructor'],
      ['perTool', 'toString'],
    ] as const) {
      const r = await call(server, tool);
      expect(r.result?.content?.[0]?.text).toBe(`called ${tool}`);
      expect({ server, tool, charged: before - (await balance()) }).toEqual({ server, tool, charged: CHARGED });
      before = await balance();
    }
    // Priced at 0 by default on perTool: constructor is free there, as any unpriced name.
    expect((await call('perTool', 'constructor')).result?.content?.[0]?.text).toBe('called constructor');
    expect(await balance()).toBe(before);
    // Each charged call is in the usage history under its own request id, a UUID version 7 (in time order) as an AI call's.
    const { items } = await gw.runtime.billing.usageHistory(sub, { limit: 10 });
    const ids = items.map((u) => u.requestId);
    expect(ids).toHaveLength(4);
    for (const id of ids) expect(id).toMatch(REQUEST_ID_V7);
    expect(new Set(ids).size).toBe(4);
  });

  it('gateway.removeServer of a name no server has, but every object has (constructor, toString), removes nothing', async () => {
    for (const name of ['constructor', 'toString', 'valueOf']) {
      const r = await rpcCall<{ removed: boolean }>(gw.url, admin, 'gateway.removeServer', { name });
      expect(r.result).toEqual({ removed: false });
    }
  });
});
