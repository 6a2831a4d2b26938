/**
 * MCP 2026-07-28 sealed `requestState` is bound to its use, over real HTTP: a state minted by one
 * tool call is accepted only by the same caller, for the same tool with the same arguments, and
 * only once — another tool, other arguments, a replay (on the same instance or on another one
 * sharing the store) get -32602. Before, the state was bound to the caller only: another tool
 * accepted it and it could be replayed for 15 minutes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryStorage, publicProcedure, router } from '@ai-backend/core';
import { createServer } from '@ai-backend/transports';
import { startIn } from './helpers/testServer.js';
import { envelope2026, modernPost, modernReply } from './helpers/mcpWire.js';

/** A tool that asks for one more round (sealing what it knows), then reports the state it got back. */
const twoRounds = (name: string) =>
  publicProcedure
    .meta({ description: `Two rounds (${name})`, mcp: { result: 'content' } })
    .input(z.object({ job: z.string() }))
    .mutation(async ({ ctx, input }) => {
      const state = ctx.mcp?.requestState as { job?: string; by?: string } | undefined;
      if (!state) return { resultType: 'input_required', requestState: await ctx.mcp!.sealState!({ job: input.job, by: name }) };
      return { content: [{ type: 'text', text: `${name} ran ${state.job} (sealed by ${state.by})` }] };
    });

const config = {
  port: 0,
  host: '127.0.0.1',
  mcp: { auth: { authType: 'none' as const }, rateLimiting: { enabled: false } },
  // Both instances accept each other's state (the seal key comes from it).
  jwt: { secret: 'request-state-e2e-secret-0123456789abcdef' },
  customRouters: { rs: router({ approve: twoRounds('approve'), wipe: twoRounds('wipe') }) },
};
const META = envelope2026('rs');

let a: { url: string; stop(): Promise<void> };
let b: { url: string; stop(): Promise<void> };
let separate: { url: string; stop(): Promise<void> };

beforeAll(async () => {
  // a and b share one store (the used-state set with it); `separate` has its own.
  const shared = new MemoryStorage();
  a = await startIn('listening', createServer(config, { storage: shared }));
  b = await startIn('listening', createServer(config, { storage: shared }));
  separate = await startIn('listening', createServer(config, { storage: new MemoryStorage() }));
});
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop(), separate?.stop()]);
});

let ids = 0;
async function toolsCall(
  url: string,
  name: string,
  args: Record<string, unknown>,
  requestState?: string,
): Promise<{ result?: any; error?: { code: number; message: string } }> {
  const params = { name, arguments: args, ...(requestState ? { requestState } : {}) };
  return modernReply(await fetch(`${url}/mcp`, modernPost(++ids, 'tools/call', params, META)));
}

async function firstRound(url: string, name: string, args: Record<string, unknown>): Promise<string> {
  const r = await toolsCall(url, name, args);
  expect(r.result?.resultType, JSON.stringify(r)).toBe('input_required');
  return r.result.requestState as string;
}

const REFUSED = { code: -32602, message: 'Invalid or expired requestState' };

describe('MCP 2026-07-28 requestState bound to caller, tool, arguments, and single use', () => {
  it('the same tool with the same arguments takes it once; a replay is refused', async () => {
    const state = await firstRound(a.url, 'approve', { job: 'deploy' });
    expect((await toolsCall(a.url, 'approve', { job: 'deploy' }, state)).result?.content?.[0]?.text).toBe(
      'approve ran deploy (sealed by approve)',
    );
    expect((await toolsCall(a.url, 'approve', { job: 'deploy' }, state)).error).toMatchObject(REFUSED);
  });

  it('another tool, or the same tool with other arguments, is refused (and does not use it up)', async () => {
    const state = await firstRound(a.url, 'approve', { job: 'deploy' });
    expect((await toolsCall(a.url, 'wipe', { job: 'deploy' }, state)).error).toMatchObject(REFUSED);
    expect((await toolsCall(a.url, 'approve', { job: 'deploy-everything' }, state)).error).toMatchObject(REFUSED);
    expect((await toolsCall(a.url, 'approve', { job: 'deploy' }, state)).result?.content?.[0]?.text).toBe(
      'approve ran deploy (sealed by approve)',
    );
  });

  it('used on one instance, refused on another sharing the store', async () => {
    const state = await firstRound(a.url, 'approve', { job: 'x' });
    expect((await toolsCall(b.url, 'approve', { job: 'x' }, state)).result?.content?.[0]?.text).toBe('approve ran x (sealed by approve)');
    expect((await toolsCall(a.url, 'approve', { job: 'x' }, state)).error).toMatchObject(REFUSED);
    expect((await toolsCall(b.url, 'approve', { job: 'x' }, state)).error).toMatchObject(REFUSED);
  });

  it('instances that share the key but not a store each accept it once (the store bounds replays: share one across instances)', async () => {
    const state = await firstRound(a.url, 'approve', { job: 'y' });
    expect((await toolsCall(separate.url, 'approve', { job: 'y' }, state)).result?.content?.[0]?.text).toBe(
      'approve ran y (sealed by approve)',
    );
    expect((await toolsCall(separate.url, 'approve', { job: 'y' }, state)).error).toMatchObject(REFUSED);
  });
});
