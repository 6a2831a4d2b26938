import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTRPCClient, httpBatchStreamLink, TRPCClientError } from '@trpc/client';
import superjson from 'superjson';
import type { AppRouter } from '@ai-backend/core';
import {
  createTestUpstream,
  creditTokens,
  mcpClient,
  PROVIDERS,
  rpcCall,
  SERVER_KEY,
  startAiServer,
  waitFor,
  SYSTEM_PROMPT,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';

/**
 * ai.streamText end to end over the real clients: @trpc/client with httpBatchStreamLink (the
 * mutation returns an async iterable), the MCP SDK client (text as progress notifications,
 * usage in the final result), and JSON-RPC (the final result), for all four providers.
 */
let upstream: TestUpstream;
let gw: AiServer;
let admin: string;

beforeAll(async () => {
  upstream = await createTestUpstream({ outputTokens: 16 });
  gw = await startAiServer(upstream, { storage: { type: 'memory' } });
  admin = await tokenFor('ops-admin', { admin: true });
});
afterAll(async () => {
  await gw.stop();
  await upstream.close();
});

function streamClient(token: string) {
  return createTRPCClient<AppRouter>({
    links: [httpBatchStreamLink({ url: gw.url + '/trpc', transformer: superjson, headers: () => ({ authorization: `Bearer ${token}` }) })],
  });
}

async function balanceOf(token: string): Promise<number> {
  return (await rpcCall<{ virtualTokenBalance: number }>(gw.url, token, 'billing.getTokenBalance')).result!.virtualTokenBalance;
}

let users = 0;
async function funded(tokens: number): Promise<{ sub: string; token: string }> {
  const sub = `stream-user-${++users}`;
  await creditTokens(gw.url, admin, sub, tokens, `k-${sub}`);
  return { sub, token: await tokenFor(sub) };
}

const fee = (n: number) => Math.ceil(n * 0.1);

describe('ai.streamText over tRPC (httpBatchStreamLink)', () => {
  for (const provider of PROVIDERS) {
    it(`${provider}: deltas arrive as an async iterable, the finish event carries usage and charge`, async () => {
      const u = await funded(10_000);
      const content = 'Stream to me';
      const stream = await streamClient(u.token).ai.streamText.mutate({ content, systemPrompt: '@support', provider });
      const events: Array<{ type: string; delta?: string; result?: any }> = [];
      for await (const e of stream) events.push(e as never);
      expect(events[0]!.type).toBe('start');
      const text = events
        .filter((e) => e.type === 'text')
        .map((e) => e.delta)
        .join('');
      const finish = events.at(-1)!;
      expect(finish.type).toBe('finish');
      expect(text).toBe(finish.result.data.text);
      expect(events.filter((e) => e.type === 'text').length).toBeGreaterThan(1);
      const used = Math.ceil((content.length + SYSTEM_PROMPT.length) / 4) + 16;
      expect(finish.result.tokenUsage.tokensUsed).toBe(used);
      expect(await balanceOf(u.token)).toBe(10_000 - used - fee(used));
      expect(JSON.stringify(events)).not.toContain(SYSTEM_PROMPT);
      expect(JSON.stringify(events)).not.toContain(SERVER_KEY);
    });
  }

  it('refusals are ordinary tRPC errors before any stream (no balance → PAYMENT_REQUIRED)', async () => {
    const token = await tokenFor('stream-broke');
    const err = await streamClient(token)
      .ai.streamText.mutate({ content: 'x', systemPrompt: 's' })
      .then(() => null)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TRPCClientError);
    expect((err as TRPCClientError<AppRouter>).data?.code).toBe('PAYMENT_REQUIRED');
  });

  it('a client that aborts mid-stream is charged input + bytes received upstream, the rest released', async () => {
    const u = await funded(10_000);
    const ac = new AbortController();
    const content = 'slow please [[upstream:chunk-delay=40]]';
    const stream = await streamClient(u.token).ai.streamText.mutate(
      { content, systemPrompt: '', provider: 'anthropic', options: { maxTokens: 200 } },
      { signal: ac.signal },
    );
    let text = '';
    try {
      for await (const e of stream as AsyncIterable<{ type: string; delta?: string }>) {
        if (e.type === 'text') text += e.delta;
        if (text.length > 10) ac.abort();
      }
    } catch {
      // the aborted iteration rejects
    }
    // The server notices the closed connection and settles. The hold is taken when the stream
    // starts, so the balance moves before the settle: wait for the settle itself in the ledger.
    await waitFor(async () => (await gw.runtime.billing.ledger.entries(u.sub)).some((e) => e.kind === 'settle'), {
      what: 'the aborted stream settled',
    });
    const balance = await balanceOf(u.token);
    const reserved = Math.ceil(content.length / 4) + 200;
    const charged = 10_000 - balance;
    expect(charged).toBeGreaterThan(0);
    expect(charged).toBeLessThan(reserved + fee(reserved));
    expect(charged).toBeGreaterThanOrEqual(Math.ceil(content.length / 4) + Buffer.byteLength(text));
  });
});

describe('ai.streamText over MCP and JSON-RPC', () => {
  for (const provider of PROVIDERS) {
    it(`${provider}: MCP progress notifications carry the text, the tool result carries the usage`, async () => {
      const u = await funded(10_000);
      const client = await mcpClient(gw.url, u.token);
      try {
        const progress: Array<{ progress: number; message?: string }> = [];
        const r = (await client.callTool(
          { name: 'streamText', arguments: { content: 'hello mcp', systemPrompt: 'be brief', provider } },
          undefined,
          {
            onprogress: (p) => progress.push(p),
          },
        )) as { isError?: boolean; content: Array<{ text: string }> };
        expect(r.isError).toBeFalsy();
        const result = JSON.parse(r.content[0]!.text);
        expect(progress.length).toBeGreaterThan(1);
        expect(progress.map((p) => p.message).join('')).toBe(result.data.text);
        expect(result.data.usage.outputTokens).toBe(16);
        expect(result.tokenUsage.tokensUsed).toBe(result.data.usage.totalTokens);
      } finally {
        await client.close();
      }
    });

    it(`${provider}: JSON-RPC answers with the final result`, async () => {
      const u = await funded(10_000);
      const r = await rpcCall(gw.url, u.token, 'ai.streamText', { content: 'hello rpc', systemPrompt: 'be brief', provider });
      expect(r.result.success).toBe(true);
      expect(r.result.data.text).toMatch(/^Test reply from/);
      expect(r.result.tokenUsage.tokensUsed).toBe(r.result.data.usage.totalTokens);
    });
  }
});
