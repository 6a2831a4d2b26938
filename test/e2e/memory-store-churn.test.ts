/**
 * A server on the memory store (embedding, `storage.type: 'memory'`) that runs for months meets
 * callers it never sees again: every distinct client address counts an MCP rate-limit window in
 * the store, a key with a ttl of one window that nobody reads after it ends. The store must let
 * such keys go: its slots stay bounded however many distinct callers came, instead of one per
 * caller and window for the life of the process.
 */
import { MemoryStorage } from '@ai-backend/core';
import { createServer } from '@ai-backend/transports';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelope2026, modernPost, modernReply } from './helpers/mcpWire.js';
import { startIn } from './helpers/testServer.js';

const storage = new MemoryStorage();
let server: { url: string; stop(): Promise<void> };

beforeAll(async () => {
  server = await startIn(
    'listening',
    createServer(
      {
        port: 0,
        host: '127.0.0.1',
        monitoring: { logging: { level: 'silent' } },
        // trustProxy: one test plays many client addresses (X-Forwarded-For).
        trustProxy: true,
        mcp: { auth: { authType: 'none' }, rateLimiting: { enabled: true, windowMs: 100 } },
      },
      { storage },
    ),
  );
});
afterAll(() => server?.stop());

const META = envelope2026('churn');
let ids = 0;

/** One 2026-07-28 tools/list from client address number `n`. */
async function listFrom(n: number): Promise<void> {
  const addr = `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
  const reply = await modernReply(await fetch(`${server.url}/mcp`, modernPost(++ids, 'tools/list', {}, META, { 'x-forwarded-for': addr })));
  if (!reply.result) throw new Error(`tools/list from ${addr}: ${JSON.stringify(reply)}`);
}

async function churn(from: number, count: number): Promise<void> {
  for (let i = 0; i < count; i += 25) await Promise.all(Array.from({ length: Math.min(25, count - i) }, (_, j) => listFrom(from + i + j)));
}

describe('the memory store under many distinct callers', () => {
  it('drops the rate-limit windows that ended instead of one key per caller for good', async () => {
    await churn(0, 500);
    const afterFirst = storage.size;
    // Each address left at least one windowed key: the store holds what the callers counted.
    expect(afterFirst).toBeGreaterThanOrEqual(500);
    await churn(500, 4000);
    // 4,500 callers, each window long over: what is held is bounded by the sweep (about one
    // sweep's worth of writes plus the live keys), not by the number of callers.
    expect(storage.size, `slots held after 4,500 distinct callers: ${storage.size}`).toBeLessThan(2500);
  }, 120_000);
});
