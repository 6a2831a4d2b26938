import { describe, expect, it } from 'vitest';
import { RecentCalls, reportedTokens } from './RecentCalls.js';

const call = (procedure: string) => ({
  atMs: Date.now(),
  entry: 'rpc',
  procedure,
  identity: null,
  via: null,
  status: 'ok',
  latencyMs: 1,
  tokens: null,
});

describe('RecentCalls', () => {
  it('keeps the newest calls, newest first, bounded by its size', () => {
    const r = new RecentCalls(3);
    for (const p of ['a', 'b', 'c', 'd', 'e']) r.push(call(p));
    expect(r.list(10).map((c) => c.procedure)).toEqual(['e', 'd', 'c']);
    expect(r.list(2).map((c) => c.procedure)).toEqual(['e', 'd']);
  });

  it('lists only calls after a sequence number (a poller sees each call once)', () => {
    const r = new RecentCalls(10);
    r.push(call('a'));
    r.push(call('b'));
    const seen = r.lastSeq;
    r.push(call('c'));
    expect(r.list(10, seen).map((c) => c.procedure)).toEqual(['c']);
    expect(r.list(10, r.lastSeq)).toEqual([]);
  });

  it('a full ring reuses its oldest row for a new call: nothing of the old call is left, and listed rows are copies', () => {
    const r = new RecentCalls(2);
    const streamed = r.push({ ...call('s'), tokens: null, streaming: true });
    r.push({ ...call('b'), status: 'FORBIDDEN', identity: 'u1', via: 'jwt' });
    const listed = r.list(10);
    r.push({ ...call('c'), tokens: 5 });
    expect(r.list(10)).toEqual([
      expect.objectContaining({ procedure: 'c', tokens: 5, status: 'ok', identity: null }),
      expect.objectContaining({ procedure: 'b', status: 'FORBIDDEN', identity: 'u1', via: 'jwt' }),
    ]);
    expect(r.list(10)[0]).not.toHaveProperty('streaming');
    // The stream's row left the ring: its end changes nothing, and what was listed before is unchanged.
    r.update(streamed, { streaming: false, tokens: 9 });
    expect(r.list(10).map((c) => c.tokens)).toEqual([5, null]);
    expect(listed.map((c) => c.procedure)).toEqual(['b', 's']);
    expect(listed[1]).toMatchObject({ streaming: true });
  });

  it('reads only a numeric usage total from an answer', () => {
    expect(reportedTokens({ text: 'secret prompt', usage: { totalTokens: 42 } })).toBe(42);
    expect(reportedTokens({ success: true, data: { text: 'answer', usage: { totalTokens: 7 } } })).toBe(7);
    expect(reportedTokens({ data: {}, usageInfo: { tokensUsed: 9 } })).toBe(9);
    expect(reportedTokens({ usage: { totalTokens: null } })).toBeNull();
    expect(reportedTokens('text')).toBeNull();
  });
});

describe('RecentCalls.update', () => {
  it('completes a call in place and lists it again to a poller past it; a call that left the ring is ignored', () => {
    const r = new RecentCalls(3);
    const s = r.push({ ...call('stream'), streaming: true });
    r.push(call('b'));
    const seen = r.lastSeq;
    r.update(s, { tokens: 42, streaming: false, latencyMs: 900 });
    expect(r.list(10, seen)).toMatchObject([{ seq: s, procedure: 'stream', tokens: 42, latencyMs: 900 }]);
    expect(r.list(10, seen)[0]!.streaming).toBeUndefined();
    expect(r.list(10).map((c) => c.procedure)).toEqual(['b', 'stream']);
    for (const p of ['c', 'd', 'e']) r.push(call(p));
    const before = r.lastSeq;
    r.update(s, { tokens: 1 });
    expect(r.lastSeq).toBe(before);
    expect(r.list(10).map((c) => c.procedure)).toEqual(['e', 'd', 'c']);
  });
});
