import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStorage } from '@ai-backend/core';
import {
  createTestUpstream,
  creditTokens,
  mcpClient,
  rpcCall,
  startAiServer,
  tokenFor,
  waitFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';

/**
 * Stateless MCP (mcp.sessionMode 'stateless'): a client cancels a call with
 * notifications/cancelled in a POST of its own, which a fresh server handles. The running call
 * must still be aborted and its hold released, as in stateful mode; before, it ran on (here
 * until the upstream timeout) holding the caller's tokens. A caller cannot cancel another's call.
 */
describe('stateless MCP: notifications/cancelled reaches the running call', () => {
  let upstream: TestUpstream;
  let gw: AiServer;
  let admin: string;
  beforeAll(async () => {
    upstream = await createTestUpstream();
    gw = await startAiServer(upstream, { mcp: { sessionMode: 'stateless' } }, { storage: new MemoryStorage() });
    admin = await tokenFor('sc-admin', { admin: true });
  });
  afterAll(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  const hang = { content: 'please [[upstream:hang]]', systemPrompt: 's', provider: 'openai', options: { maxTokens: 50 } };
  const holds = async () => (await gw.runtime.storage.keys('hold:')).length;
  const rawPost = (token: string, body: unknown) =>
    fetch(gw.url + '/mcp', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${token}`,
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify(body),
    });

  for (const tool of ['generateText', 'streamText']) {
    it(`${tool}: the SDK client aborting the call releases its hold at once`, async () => {
      const sub = `sc-${tool}`;
      await creditTokens(gw.url, admin, sub, 10_000, `${sub}-credit`);
      const token = await tokenFor(sub);
      const client = await mcpClient(gw.url, token);
      const ac = new AbortController();
      const call = client.callTool({ name: tool, arguments: hang }, undefined, { signal: ac.signal }).catch(() => 'cancelled');
      await waitFor(async () => (await holds()) === 1, { timeoutMs: 5000 });
      ac.abort('user cancelled');
      expect(await call).toBe('cancelled');
      await waitFor(async () => (await holds()) === 0, { timeoutMs: 3000, what: 'the hold released after notifications/cancelled' });
      // generateText: nothing charged. A stream whose upstream request went out is charged its
      // input estimate (docs/ai.md, Streaming and metering), never its whole hold.
      const balance = (await rpcCall(gw.url, token, 'billing.getTokenBalance')).result.virtualTokenBalance;
      if (tool === 'generateText') expect(balance).toBe(10_000);
      else expect(balance).toBeGreaterThan(10_000 - 153);
      expect((await gw.runtime.billing.ledger.audit(sub)).consistent).toBe(true);
      await client.close();
    });
  }

  it("another caller's notifications/cancelled with the same request id does not touch the call", async () => {
    const sub = 'sc-owner';
    await creditTokens(gw.url, admin, sub, 10_000, `${sub}-credit`);
    const owner = await tokenFor(sub);
    const slow = { ...hang, content: 'please [[upstream:latency=600]]' };
    const call = rawPost(owner, { jsonrpc: '2.0', id: 77, method: 'tools/call', params: { name: 'generateText', arguments: slow } }).then(
      (r) => r.json(),
    );
    await waitFor(async () => (await holds()) === 1, { timeoutMs: 5000 });
    const other = await tokenFor('sc-other');
    expect(
      (await rawPost(other, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 77, reason: 'not yours' } })).status,
    ).toBe(202);
    const answer = (await call) as { result?: { isError?: boolean; content: Array<{ text: string }> } };
    expect(answer.result?.isError).toBeFalsy();
    expect(JSON.parse(answer.result!.content[0]!.text)).toMatchObject({ success: true });
  });

  it('a cancel that could be for either of two calls with the same id from one caller (two clients) cancels neither', async () => {
    const sub = 'sc-two';
    await creditTokens(gw.url, admin, sub, 10_000, `${sub}-credit`);
    const token = await tokenFor(sub);
    const slow = { ...hang, content: 'please [[upstream:latency=600]]' };
    const call = () =>
      rawPost(token, { jsonrpc: '2.0', id: 88, method: 'tools/call', params: { name: 'generateText', arguments: slow } }).then((r) =>
        r.json(),
      );
    const calls = [call(), call()];
    await waitFor(async () => (await holds()) === 2, { timeoutMs: 5000 });
    await rawPost(token, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 88 } });
    for (const answer of (await Promise.all(calls)) as Array<{ result?: { isError?: boolean; content: Array<{ text: string }> } }>) {
      expect(answer.result?.isError).toBeFalsy();
      expect(JSON.parse(answer.result!.content[0]!.text)).toMatchObject({ success: true });
    }
  });
});
