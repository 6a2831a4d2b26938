/**
 * A 2025 MCP session opened with an API key is that key's: the owner's other keys and the owner's
 * own sign-in get 404 "Session not found" on it (as for an unknown session), and a session opened
 * with the sign-in is not a key's either. Before, a session was bound to the key owner's subject
 * only, so a narrower key holding the session id could use the session and replay (GET with
 * Last-Event-ID) the events a wider credential's calls produced. Checked on one instance and
 * across two instances sharing PostgreSQL and Redis (the session rebuilt from its record).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPostgres, testRedis } from '@ai-backend/test-utils/services';
import { startKeyCluster, type KeyCluster } from './helpers/apiKeyCluster.js';
import { LATEST } from './helpers/mcpWire.js';

const pgAt = await testPostgres();
const redisAt = await testRedis();

const ACCEPT = 'application/json, text/event-stream';
let ids = 0;

/** initialize + notifications/initialized with `token`; the session id. */
async function openSession(url: string, token: string): Promise<string> {
  const res = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: ACCEPT, authorization: `Bearer ${token}` },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: ++ids,
      method: 'initialize',
      params: { protocolVersion: LATEST, capabilities: {}, clientInfo: { name: 'keys', version: '1' } },
    }),
  });
  expect(res.status, await res.clone().text()).toBe(200);
  await res.body?.cancel();
  const sessionId = res.headers.get('mcp-session-id')!;
  expect(sessionId).toBeTruthy();
  const initialized = await post(url, token, sessionId, { jsonrpc: '2.0', method: 'notifications/initialized' });
  expect(initialized.status).toBe(202);
  return sessionId;
}

function post(url: string, token: string, sessionId: string, message: unknown): Promise<Response> {
  return fetch(`${url}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: ACCEPT,
      authorization: `Bearer ${token}`,
      'mcp-protocol-version': LATEST,
      'mcp-session-id': sessionId,
    },
    body: JSON.stringify(message),
  });
}

/** tools/list on the session with `token`: the HTTP status. */
async function listStatus(url: string, token: string, sessionId: string): Promise<number> {
  const res = await post(url, token, sessionId, { jsonrpc: '2.0', id: ++ids, method: 'tools/list' });
  await res.body?.cancel();
  return res.status;
}

describe.skipIf(!pgAt.ok || !redisAt.ok)('MCP 2025 sessions belong to the credential that opened them', () => {
  let cluster: KeyCluster;
  let keyA: string;
  let keyB: string;
  beforeAll(async () => {
    cluster = await startKeyCluster('mcpsesskeys', pgAt, redisAt, { outputTokens: 8 });
    keyA = (await cluster.newKey()).key;
    keyB = (await cluster.newKey()).key;
  });
  afterAll(() => cluster?.stop());

  it("a session opened with an API key is unknown to the owner's other key and to the owner's sign-in, on either instance", async () => {
    const { a, b, user } = cluster;
    const sessionId = await openSession(a.url, keyA);
    for (const gw of [a, b]) {
      expect(await listStatus(gw.url, keyB, sessionId), `other key on ${gw === a ? 'a' : 'b'}`).toBe(404);
      expect(await listStatus(gw.url, user, sessionId), `owner's sign-in on ${gw === a ? 'a' : 'b'}`).toBe(404);
    }
    // The refusals did not take the session from its key, here or after a move to the other instance.
    expect(await listStatus(a.url, keyA, sessionId)).toBe(200);
    expect(await listStatus(b.url, keyA, sessionId)).toBe(200);
  });

  it("a session opened with the owner's sign-in is unknown to the owner's keys, on either instance", async () => {
    const { a, b, user } = cluster;
    const sessionId = await openSession(a.url, user);
    for (const gw of [b, a]) {
      for (const key of [keyA, keyB]) expect(await listStatus(gw.url, key, sessionId)).toBe(404);
    }
    expect(await listStatus(b.url, user, sessionId)).toBe(200);
    expect(await listStatus(a.url, user, sessionId)).toBe(200);
  });
});
