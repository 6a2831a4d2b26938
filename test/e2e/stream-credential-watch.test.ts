/**
 * A long-lived stream is checked while it stays open, not only when it opens (docs/security.md,
 * "Streams and the credential"): an MCP GET stream opened with an API key ends when the key is
 * revoked, at once and on another instance than the revocation's (the key-change signal over
 * Redis); one opened with a token ends when the token expires (the periodic check,
 * `limits.streamCredentialCheckSec`). A stream whose credential still holds stays open. Before,
 * a stream outlived its credential for as long as the client kept it.
 */
import { mintDevToken } from '@ai-backend/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPostgres, testRedis } from '@ai-backend/test-utils/services';
import { startKeyCluster, type KeyCluster } from './helpers/apiKeyCluster.js';
import { createTestUpstream, JWT_SECRET, rpcCall, startAiServer, type AiServer, type TestUpstream } from './helpers/aiGateway.js';
import { mcpHeaders as headers, openMcpStream as openStream, within } from './helpers/mcpStream.js';

const pgAt = await testPostgres();
const redisAt = await testRedis();

describe.skipIf(!pgAt.ok || !redisAt.ok)('an API key revoked while its stream is open', () => {
  let cluster: KeyCluster;
  beforeAll(async () => {
    cluster = await startKeyCluster('streamwatch', pgAt, redisAt, { outputTokens: 8 });
  });
  afterAll(() => cluster?.stop());

  it('ends the stream at once, on another instance than the revocation, and leaves the other keys’ streams open', async () => {
    const revoked = await cluster.newKey();
    const kept = await cluster.newKey();
    const gone = await openStream(cluster.b.url, revoked.key);
    const stays = await openStream(cluster.b.url, kept.key);
    try {
      // Open for now: nothing is cut while the credential holds.
      expect(await within(gone.ended, 300)).toBe('open');
      const r = await rpcCall(cluster.a.url, cluster.user, 'keys.revoke', { id: revoked.id });
      expect(r.error, r.text).toBeUndefined();
      // The default check is every 30 s: only the key-change signal ends it this soon.
      expect(await within(gone.ended, 5_000)).toBe('ended');
      expect(await within(stays.ended, 500)).toBe('open');
      const again = await fetch(`${cluster.b.url}/mcp`, {
        headers: { ...headers(revoked.key, gone.sessionId), accept: 'text/event-stream' },
      });
      expect(again.status).toBe(401);
      await again.body?.cancel();
    } finally {
      gone.close();
      stays.close();
    }
  });
});

describe('a token that expires while its stream is open', () => {
  let upstream: TestUpstream;
  let gw: AiServer;
  beforeAll(async () => {
    upstream = await createTestUpstream({ outputTokens: 8 });
    gw = await startAiServer(upstream, {
      jwt: { secret: JWT_SECRET, clockToleranceSec: 0 },
      limits: { streamCredentialCheckSec: 1 },
    } as Parameters<typeof startAiServer>[1]);
  });
  afterAll(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  it('ends at the first check after the expiry; a stream whose token holds stays open', async () => {
    const short = await mintDevToken({ secret: JWT_SECRET, sub: 'expiring-user', scopes: ['mcp'], expiresIn: 3 });
    const long = await mintDevToken({ secret: JWT_SECRET, sub: 'steady-user', scopes: ['mcp'], expiresIn: '1h' });
    const expiring = await openStream(gw.url, short);
    const steady = await openStream(gw.url, long);
    try {
      expect(await within(expiring.ended, 1_500)).toBe('open');
      expect(await within(expiring.ended, 6_000)).toBe('ended');
      expect(await within(steady.ended, 1_500)).toBe('open');
    } finally {
      expiring.close();
      steady.close();
    }
  });
});
