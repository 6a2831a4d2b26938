import { afterEach, describe, expect, it } from 'vitest';
import { alice, createAiHarness, SYSTEM_PROMPT, type AiHarness } from '../routers/ai/__tests__/aiHarness.js';

let h: AiHarness;
afterEach(() => h?.close());

/** The Live view's row of a streamed call: recorded when the stream starts, completed when it ends. */
describe('recent calls: a streamed call shows its tokens once its stream ends', () => {
  it("ai.streamText: first without tokens (streaming), then with the finish event's total and its whole duration", async () => {
    h = await createAiHarness();
    await h.credit(alice.sub, 10_000);
    const stream = await h
      .caller(alice)
      .ai.streamText({ content: 'Tell me a story please', systemPrompt: SYSTEM_PROMPT, provider: 'openai' });
    const seen = h.runtime.recentCalls.lastSeq;
    const [started] = h.runtime.recentCalls.list(1);
    expect(started).toMatchObject({ procedure: 'ai.streamText', status: 'ok', tokens: null, streaming: true });
    let total: number | null | undefined;
    for await (const e of stream) if (e.type === 'finish') total = e.result.data.usage.totalTokens;
    expect(total).toBeGreaterThan(0);
    // A poller that saw the start gets the same call again (same seq), completed.
    const changed = h.runtime.recentCalls.list(100, seen);
    expect(changed).toHaveLength(1);
    expect(changed[0]).toMatchObject({ seq: started!.seq, tokens: total, status: 'ok' });
    expect(changed[0]!.streaming).toBeUndefined();
    expect(changed[0]!.latencyMs).toBeGreaterThanOrEqual(started!.latencyMs);
    expect(h.runtime.recentCalls.list(100, h.runtime.recentCalls.lastSeq)).toEqual([]);
  });

  it('a stream that fails after it started shows the failure', async () => {
    h = await createAiHarness();
    await h.credit(alice.sub, 10_000);
    const stream = await h.caller(alice).ai.streamText({ content: 'hello [[upstream:drop]]', systemPrompt: 's', provider: 'openai' });
    await expect(async () => {
      for await (const _ of stream) void _;
    }).rejects.toThrow();
    const [row] = h.runtime.recentCalls.list(1);
    expect(row).toMatchObject({ procedure: 'ai.streamText', tokens: null });
    expect(row!.status).not.toBe('ok');
    expect(row!.streaming).toBeUndefined();
  });

  // Stopping before the end is the client cancelling, as a generateText whose client leaves
  // (CANCELLED → CLIENT_CLOSED_REQUEST); statistics and metrics count it the same way.
  it('a consumer that stops early ends the row as cancelled (no tokens reported)', async () => {
    h = await createAiHarness();
    await h.credit(alice.sub, 10_000);
    const stream = await h.caller(alice).ai.streamText({ content: 'Tell me a story please', systemPrompt: 's', provider: 'anthropic' });
    for await (const e of stream) if (e.type === 'start') break;
    const [row] = h.runtime.recentCalls.list(1);
    expect(row).toMatchObject({ procedure: 'ai.streamText', status: 'CLIENT_CLOSED_REQUEST', tokens: null });
    expect(row!.streaming).toBeUndefined();
  });
});
