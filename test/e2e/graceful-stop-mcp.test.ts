import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger } from '@ai-backend/core/internal';
import { createServer } from '@ai-backend/transports';
import {
  createTestUpstream,
  creditTokens,
  gatewayConfig,
  mcpClient,
  rpcCall,
  startAiServer,
  tokenFor,
  waitFor,
} from './helpers/aiGateway.js';

/**
 * Graceful stop drains /mcp calls like /rpc ones: a tools/call in flight when server.stop()
 * starts is answered (and charged for what it produced), not cut by ending its session at once,
 * which left the client without an answer and released a call the upstream was about to finish.
 */
describe('graceful stop with MCP calls in flight', () => {
  it('a tools/call and a streamed tool call in flight finish and are answered; no hold is left', async () => {
    const upstream = await createTestUpstream();
    const dir = await mkdtemp(path.join(tmpdir(), 'graceful-stop-'));
    const storage = { type: 'sqlite' as const, dir };
    const gw = await startAiServer(upstream, { storage });
    const sub = 'gs-user';
    await creditTokens(gw.url, await tokenFor('gs-admin', { admin: true }), sub, 10_000, 'gs-1');
    const token = await tokenFor(sub);
    const client = await mcpClient(gw.url, token);
    const slow = { content: 'please [[upstream:latency=800]]', systemPrompt: 's', provider: 'openai', options: { maxTokens: 50 } };
    const streamed = { content: 'please [[upstream:chunk-delay=100]]', systemPrompt: 's', provider: 'openai', options: { maxTokens: 50 } };
    const answer = (p: Promise<unknown>) =>
      Promise.race([p.catch((e: unknown) => `failed: ${String(e)}`), new Promise((r) => setTimeout(() => r('no answer'), 5000))]);
    const before = upstream.requests.length;
    const calls = [
      answer(client.callTool({ name: 'generateText', arguments: slow })),
      answer(client.callTool({ name: 'streamText', arguments: streamed }, undefined, { onprogress: () => undefined })),
      answer(rpcCall(gw.url, token, 'ai.generateText', slow)),
    ];
    await waitFor(() => upstream.requests.length === before + 3, { timeoutMs: 5000 });
    const stopped = gw.stop();
    type Answer = { isError?: boolean; content?: Array<{ text: string }>; result?: unknown };
    const [mcpText, mcpStream, rpc] = (await Promise.all(calls)) as [Answer, Answer, Answer];
    await stopped;
    expect(rpc.result).toMatchObject({ success: true });
    expect(mcpText).toMatchObject({ content: [{ type: 'text' }] });
    expect(mcpText.isError).toBeFalsy();
    expect(JSON.parse(mcpText.content![0]!.text)).toMatchObject({ success: true });
    expect(mcpStream.isError).toBeFalsy();
    expect(JSON.parse(mcpStream.content![0]!.text)).toMatchObject({ success: true });
    // Restarted on the same file: every call was settled (charged), none released, no hold left.
    const again = await startAiServer(upstream, { storage });
    expect(await again.runtime.storage.keys('hold:')).toEqual([]);
    const kinds = (await again.runtime.billing.ledger.entries(sub)).map((e) => e.kind);
    expect(kinds.filter((k) => k === 'settle')).toHaveLength(3);
    expect(kinds).not.toContain('release');
    expect((await again.runtime.billing.ledger.audit(sub)).consistent).toBe(true);
    await again.stop();
    await rm(dir, { recursive: true, force: true });
    await client.close().catch(() => undefined);
    await upstream.close();
  }, 30_000);

  it('calls still running at the deadline are cut and released once, by stop, without errors from their own late release', async () => {
    const upstream = await createTestUpstream();
    const dir = await mkdtemp(path.join(tmpdir(), 'graceful-stop-'));
    const storage = { type: 'sqlite' as const, dir };
    const logs: string[] = [];
    const server = createServer(gatewayConfig(upstream, { storage }), {
      logger: createLogger('debug', (l) => logs.push(l)),
      shutdownTimeoutMs: 300,
    });
    const { url } = await server.start();
    const sub = 'gs-cut';
    await creditTokens(url, await tokenFor('gs-admin', { admin: true }), sub, 10_000, 'gs-cut-1');
    const token = await tokenFor(sub);
    const client = await mcpClient(url, token);
    const hang = { content: 'please [[upstream:hang]]', systemPrompt: 's', provider: 'openai', options: { maxTokens: 50 } };
    const before = upstream.requests.length;
    const calls = [
      client.callTool({ name: 'generateText', arguments: hang }).catch(() => 'cut'),
      rpcCall(url, token, 'ai.generateText', hang).catch(() => 'cut'),
    ];
    await waitFor(() => upstream.requests.length === before + 2, { timeoutMs: 5000 });
    await server.stop();
    await Promise.race([Promise.all(calls), new Promise((r) => setTimeout(r, 2000))]); // a cap, not a pause
    await new Promise((r) => setTimeout(r, 200)); // the aborted upstream requests end after stop (nothing to await)
    expect(logs.filter((l) => /"level":"error"/.test(l))).toEqual([]);
    const again = await startAiServer(upstream, { storage });
    expect(await again.runtime.storage.keys('hold:')).toEqual([]);
    const releases = (await again.runtime.billing.ledger.entries(sub)).filter((e) => e.kind === 'release');
    // Each hold closed exactly once: by the aborted call itself or, when it came too late, by stop.
    expect(releases).toHaveLength(2);
    for (const e of releases) expect(['cancelled', 'server stopping']).toContain(e.note?.reason);
    expect((await again.runtime.billing.ledger.audit(sub)).consistent).toBe(true);
    await again.stop();
    await client.close().catch(() => undefined);
    await upstream.close();
    await rm(dir, { recursive: true, force: true });
  }, 30_000);
});
