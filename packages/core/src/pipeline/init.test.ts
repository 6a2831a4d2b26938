import { TRPCError } from '@trpc/server';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { describe, expect, it } from 'vitest';
import type { Context } from './context.js';
import { t } from './init.js';

/** An error that counts how often its stack is read (formatting a stack is what an error answer cost). */
function countingError(reads: { n: number }): TRPCError {
  const err = new TRPCError({ code: 'FORBIDDEN', message: 'not yours' });
  const stack = err.stack;
  Object.defineProperty(err, 'stack', {
    get: () => {
      reads.n++;
      return stack;
    },
  });
  return err;
}

describe('the tRPC instance', () => {
  it('answers an error without reading its stack, and puts none in the answer', async () => {
    const reads = { n: 0 };
    const appRouter = t.router({
      refuse: t.procedure.query(() => {
        throw countingError(reads);
      }),
    });
    const res = await fetchRequestHandler({
      endpoint: '/trpc',
      req: new Request('http://localhost/trpc/refuse'),
      router: appRouter,
      createContext: () => ({}) as Context,
    });
    const body = (await res.json()) as { error: { json: { message: string; data: Record<string, unknown> } } };
    expect(res.status).toBe(403);
    expect(body.error.json.message).toBe('not yours');
    expect(body.error.json.data).not.toHaveProperty('stack');
    expect(reads.n).toBe(0);
  });
});
