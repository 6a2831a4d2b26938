import { describe, expect, it } from 'vitest';
import type { Context, McpCallContext } from './context.js';
import { drainStream } from './drainStream.js';

async function* events(...items: unknown[]) {
  yield* items;
}

/** A context whose MCP side records the progress it is given. */
function mcpCtx(progress: Array<[number, string | undefined]>): Context {
  const mcp = {
    toolName: 'streamText',
    progressWanted: true,
    progress: async (value: number, _total?: number, message?: string) => {
      progress.push([value, message]);
    },
  } as unknown as McpCallContext;
  return { mcp } as unknown as Context;
}

describe('drainStream', () => {
  it('reports characters so far as progress, strictly increasing: an empty delta sends nothing (MCP: progress must increase)', async () => {
    const progress: Array<[number, string | undefined]> = [];
    const result = await drainStream(
      events(
        { type: 'text', delta: '' },
        { type: 'text', delta: 'ab' },
        { type: 'text', delta: '' },
        { type: 'text', delta: 'c' },
        { type: 'finish', result: { text: 'abc' } },
      ),
      mcpCtx(progress),
    );
    expect(result).toEqual({ text: 'abc' });
    expect(progress).toEqual([
      [2, 'ab'],
      [3, 'c'],
    ]);
  });

  it('without a finish event the result is the list of events', async () => {
    const progress: Array<[number, string | undefined]> = [];
    expect(await drainStream(events({ type: 'text', delta: 'x' }), mcpCtx(progress))).toEqual([{ type: 'text', delta: 'x' }]);
  });
});
