import { describe, expect, it } from 'vitest';
import { readTextPrefix } from './readTextPrefix.js';

/** A body of `chunks`, recording whether it was cancelled and how many chunks were pulled. */
function body(chunks: string[]) {
  const seen = { pulled: 0, cancelled: false };
  const enc = new TextEncoder();
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      if (seen.pulled === chunks.length) return c.close();
      c.enqueue(enc.encode(chunks[seen.pulled++]!));
    },
    cancel() {
      seen.cancelled = true;
    },
  });
  return { res: new Response(stream), seen };
}

describe('readTextPrefix', () => {
  it('reads a short body whole', async () => {
    const { res, seen } = body(['{"error":', '{"code":"x"}}']);
    expect(await readTextPrefix(res, 1024)).toBe('{"error":{"code":"x"}}');
    expect(seen.cancelled).toBe(false);
  });

  it('stops at the limit and cancels the rest of an endless body', async () => {
    const { res, seen } = body(Array.from({ length: 1000 }, () => 'a'.repeat(100)));
    const text = await readTextPrefix(res, 250);
    expect(text).toBe('a'.repeat(250));
    expect(seen.pulled).toBeLessThan(10);
    expect(seen.cancelled).toBe(true);
  });

  it('no body: undefined', async () => {
    expect(await readTextPrefix(new Response(null, { status: 400 }), 10)).toBeUndefined();
  });
});
