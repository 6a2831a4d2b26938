import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPrivatePostgres, testService, type HangableServer, type PrivateServer } from '@ai-backend/test-utils/services';
import {
  createTestUpstream,
  creditTokens,
  rpcCall,
  startAiServer,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';

/**
 * PostgreSQL hangs (every process of a private cluster stopped: its sockets stay open and nothing
 * answers), the outage a client of a frozen host or a saturated database sees. One user's
 * concurrent calls touch the same rows, so they queue behind each other in the store (group
 * commit, the per-key lock); each used to wait for the one before it to reach its own query
 * timeout, and ten calls answered 503 one timeout apart (0.8 … 8 s with the default 800 ms).
 * Queued behind a failure of the store, they now fail with it: all within a couple of timeouts,
 * none served for free, and the same server serves again once PostgreSQL answers.
 */
const pgServer = await testService('postgres-server');
const QUERY_TIMEOUT_MS = 400;

describe.skipIf(!pgServer.ok)('PostgreSQL hangs', () => {
  let pg: PrivateServer & HangableServer & { user: string; database: string };
  let upstream: TestUpstream;
  let gw: AiServer;
  const sub = 'pg-hang-user';
  let token: string;

  beforeAll(async () => {
    pg = await startPrivatePostgres();
    upstream = await createTestUpstream();
    gw = await startAiServer(upstream, {
      storage: {
        type: 'postgres',
        postgres: {
          host: pg.host,
          port: pg.port,
          user: pg.user,
          database: pg.database,
          queryTimeoutMs: QUERY_TIMEOUT_MS,
          connectTimeoutMs: QUERY_TIMEOUT_MS,
        },
      },
    });
    token = await tokenFor(sub);
    await creditTokens(gw.url, await tokenFor('pg-hang-admin', { admin: true }), sub, 1_000_000, 'pg-hang-1');
  }, 60_000);
  afterAll(async () => {
    await pg?.thaw();
    await gw?.stop();
    await upstream?.close();
    await pg?.close();
  });

  const chat = async () => {
    const started = performance.now();
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/gpt-5-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 10 }),
    });
    await res.text();
    return { status: res.status, ms: Math.round(performance.now() - started) };
  };

  it("one user's concurrent calls all answer 503 within a few query timeouts, not one timeout apart", async () => {
    expect((await chat()).status).toBe(200);
    const served = upstream.requests.length;
    await pg.freeze();
    let answers: Array<{ status: number; ms: number }>;
    try {
      answers = await Promise.all(Array.from({ length: 10 }, chat));
    } finally {
      await pg.thaw();
    }
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(503));
    const times = answers.map((a) => a.ms).sort((a, b) => a - b);
    // Before: the n-th answered about n timeouts late (the last after more than 10, the spread 9).
    // The bounds leave the fix room for a loaded machine (CI's two cores beside three other files
    // once took the spread past 2 timeouts) and still fail the queue: 7 and 4 timeouts.
    expect(times.at(-1), `answered after ${times.join(', ')} ms`).toBeLessThan(7 * QUERY_TIMEOUT_MS);
    expect(times.at(-1)! - times[0]!, `answered after ${times.join(', ')} ms`).toBeLessThan(4 * QUERY_TIMEOUT_MS);
    expect(upstream.requests.length, 'no call went upstream while the store hung').toBe(served);

    // Back: the same server serves, and the ledger holds what was charged.
    expect((await chat()).status).toBe(200);
    const audit = await gw.runtime.billing.ledger.audit(sub);
    expect(audit.consistent).toBe(true);
    const balance = await rpcCall<{ virtualTokenBalance: number }>(gw.url, token, 'billing.getTokenBalance');
    expect(balance.result!.virtualTokenBalance).toBeLessThan(1_000_000);
  }, 60_000);
});
