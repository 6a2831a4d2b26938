import { describe, expect, it } from 'vitest';
import { AnswerTooLarge, readAtMost } from './fetchWireAnswer.js';

/** A response whose body comes in `chunks` pieces of `size` bytes, without a declared length. */
function chunked(chunks: number, size: number): { res: Response; pulled: () => number } {
  let n = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (n++ < chunks) c.enqueue(new Uint8Array(size).fill(65));
      else c.close();
    },
  });
  return { res: new Response(body), pulled: () => n };
}

describe('readAtMost', () => {
  it('reads a body up to the limit whole, with or without a declared length', async () => {
    expect((await readAtMost(chunked(4, 10).res, 40)).byteLength).toBe(40);
    expect(await readAtMost(new Response('{"a":1}', { headers: { 'content-length': '7' } }), 40)).toEqual(
      new TextEncoder().encode('{"a":1}'),
    );
  });

  it('stops reading a body past the limit: a declared length at once, a chunked one at the chunk that passes it', async () => {
    await expect(readAtMost(new Response('x'.repeat(50), { headers: { 'content-length': '50' } }), 40)).rejects.toBeInstanceOf(
      AnswerTooLarge,
    );
    const big = chunked(1000, 10);
    await expect(readAtMost(big.res, 40)).rejects.toBeInstanceOf(AnswerTooLarge);
    expect(big.pulled()).toBeLessThan(10);
  });
});
