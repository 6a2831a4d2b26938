/**
 * What closing an MCP 2025 session costs must not grow with the store. Every session's close
 * forgets what it registered as client workspaces without an identity; it used to list the
 * session's key prefix for that at each close, and a key listing walks the whole keyspace on
 * Redis (SCAN) and in memory: on a server that had run for months (ledgers, usage rows, API keys
 * stored), every session that ended paid a walk of everything stored. Now only a session that
 * registered something lists its keys. The store here counts its listings (a real MemoryStorage
 * that tallies `keys()` calls by prefix).
 */
import { MemoryStorage } from '@ai-backend/core';
import { createServer } from '@ai-backend/transports';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, messagesOf, openWireSession, readSse, type WireSession } from './helpers/mcpWire.js';
import { startIn } from './helpers/testServer.js';

/** A memory store that counts key listings per prefix. */
class ListingCountingStorage extends MemoryStorage {
  readonly listings: string[] = [];
  override keys(prefix: string): Promise<string[]> {
    this.listings.push(prefix);
    return super.keys(prefix);
  }
}

const storage = new ListingCountingStorage();
let server: { url: string; stop(): Promise<void> };
let url: string;

beforeAll(async () => {
  server = await startIn(
    'listening',
    createServer(
      {
        port: 0,
        host: '127.0.0.1',
        monitoring: { logging: { level: 'silent' } },
        mcp: { auth: { authType: 'none' }, rateLimiting: { enabled: false } },
      },
      { storage },
    ),
  );
  url = `${server.url}/mcp`;
});
afterAll(() => server?.stop());

const workspaceListings = () => storage.listings.filter((p) => p.startsWith('ws:client')).length;

async function close(s: WireSession): Promise<void> {
  const res = await fetch(url, { method: 'DELETE', headers: s.headers() });
  expect(res.status).toBe(200);
  await res.text();
}

describe('closing MCP sessions', () => {
  it('lists no keys for sessions that registered nothing; one that did still leaves nothing stored', async () => {
    const before = workspaceListings();
    for (let i = 0; i < 30; i++) {
      const s = await openWireSession(url);
      const listed = await s.post({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
      expect(listed.status).toBe(200);
      await listed.text();
      await close(s);
    }
    expect(workspaceListings() - before, 'key listings for 30 sessions that registered no client workspace').toBe(0);

    // A session that registers client workspaces without an identity: its close removes them.
    const s = await openWireSession(url);
    for (const [n, id] of ['one', 'two'].entries()) {
      const res = await s.post(call(n + 1, 'registerClientWorkspace', { id, uri: `file:///home/ann/${id}` }));
      const [answer] = messagesOf(await readSse(res, (ev) => messagesOf(ev).some((m) => m.id === n + 1)));
      expect(answer?.result?.isError).toBeFalsy();
    }
    const stored = async () => (await storage.keys('ws:client')).filter((k) => k.includes(encodeURIComponent(s.sessionId)));
    // The two workspaces and the mark that the session registered some.
    expect(await stored()).toHaveLength(3);
    await close(s);
    await expect.poll(stored, { timeout: 3000 }).toEqual([]);
  });
});
