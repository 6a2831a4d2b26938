import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import OpenAI from 'openai';
import type { ConfigInput } from '@ai-backend/core/internal';
import { dropTestKeys, dropTestSchema, testPostgres, testPostgresOptions, testRedis } from '@ai-backend/test-utils/services';
import {
  createTestUpstream,
  creditTokens,
  startAiServer,
  tokenFor,
  waitFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';
import type { V1Path } from './helpers/describeMatrix.js';

/**
 * Store round trips of one metered `/v1/chat/completions` call through a real server, on each
 * path (docs/ai.md#pass-through), counted at the drivers as roundTrips.test.ts counts billing's:
 * every query a pg Client sends and every command ioredis sends. A warm call makes two: the hold
 * (the payer decision folded in) and the settle. The per-caller rate limit (on by default, as
 * deployed) counts in leases (services/rateLimit/WindowLeases.ts): a warm caller's hit spends a
 * unit its instance already counted, so its counter is no request of the call. The pass-through
 * path makes no more than the SDK path (both settle before answering; the count still waits for
 * the ledger's settle entry, so it holds if that ever changes).
 * What the process sends on its own is kept out of the counted calls rather than filtered out of
 * their count: the servers' clock stands still (no new minute's first hit, a lease taken in the
 * store, falls in a counted call), and a call that a billing sweep (every minute, either server)
 * overlapped is counted again (see countQuiet).
 */
// pg has no types in the test project (no @types/pg): only its Client's query is spied on.
const { default: pg } = (await import('pg' as string)) as { default: { Client: { prototype: { query(...args: unknown[]): unknown } } } };
const pgAt = await testPostgres();
const redisAt = await testRedis();

const stores: Array<{ name: string; storage: () => NonNullable<ConfigInput>['storage']; cleanup: () => Promise<unknown> }> = [];
if (pgAt.ok) {
  const options = testPostgresOptions(pgAt, 'v1rt');
  stores.push({
    name: 'postgres',
    storage: () => ({ type: 'postgres', postgres: options }),
    cleanup: () => dropTestSchema(pgAt, options.schema),
  });
}
if (redisAt.ok) {
  const keyPrefix = `e2e-v1rt-${randomUUID()}:`;
  stores.push({
    name: 'redis',
    storage: () => ({ type: 'redis', redis: { host: redisAt.host, port: redisAt.port, keyPrefix } }),
    cleanup: () => dropTestKeys(redisAt, keyPrefix),
  });
}

describe.skipIf(stores.length > 0)('store round trips of a /v1 call', () => {
  it.skip('needs PostgreSQL or Redis (skipped: neither is reachable)', () => undefined);
});

describe.each(stores)('store round trips of a metered /v1 call, on $name', (store) => {
  let upstream: TestUpstream;
  const servers = new Map<V1Path, AiServer>();
  const sweeps: Sweeps = { running: 0, started: 0 };
  beforeAll(async () => {
    upstream = await createTestUpstream({ outputTokens: 16 });
    // The rate limits' clock stands still: every hit of this suite falls in one window, so a warm
    // caller's hit is always one its lease covers (a new minute's first hit is counted in the
    // store, and on a slow host a minute can turn between the warm-up and the counted call).
    const startedAt = Date.now();
    for (const path of ['sdk', 'pass-through'] as const) {
      const gw = await startAiServer(
        upstream,
        // The per-caller limit on, as deployed (the shared helper turns it off for its suites).
        {
          storage: store.storage(),
          mcp: { auth: { authType: 'jwt' }, rateLimiting: { enabled: true } } as NonNullable<ConfigInput>['mcp'],
        },
        { path, clock: () => startedAt },
      );
      watchSweeps(gw, sweeps);
      servers.set(path, gw);
    }
  });
  afterAll(async () => {
    for (const s of servers.values()) await s.stop();
    await upstream?.close();
    await store.cleanup();
  });

  it('two per warm call (hold, settle) on both paths, the rate limit on', async () => {
    const admin = await tokenFor('v1rt-admin', { admin: true });
    const counts: Record<string, number> = {};
    for (const [path, gw] of servers) {
      const sub = `v1rt-${store.name}-${path}`;
      await creditTokens(gw.url, admin, sub, 1_000_000, sub);
      const client = new OpenAI({ baseURL: gw.url + '/v1', apiKey: await tokenFor(sub), maxRetries: 0 });
      const ask = () =>
        client.chat.completions.create({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'count me' }] }).withResponse();
      // A call is done when its hold is closed (settled); read in process, without a store request.
      const closed = () => waitFor(async () => (gw.runtime.billing.openHolds() === 0 ? true : undefined), { what: 'the settle' });
      // Warm: what a process learns once per user (the rows its transactions plan on, Redis's scripts).
      for (let i = 0; i < 3; i++) await ask();
      await closed();
      // The first call also noted the caller in the user directory (off the request path, once per
      // user): under load those writes can still be running when the counted call starts.
      await gw.runtime.users.settled();
      counts[path] = await countQuiet(sweeps, async () => {
        const { response } = await ask();
        expect(response.headers.get('x-ai-backend-path') === 'pass-through').toBe(path === 'pass-through');
        await closed();
      });
    }
    expect(counts).toEqual({ sdk: 2, 'pass-through': 2 });
  });

  // The hold is a non-durable transaction (Reservations.reserve, docs/storage.md "Non-durable
  // transactions"): its commit does not wait for the WAL flush; the settle's does, and PostgreSQL
  // flushes WAL in order, so the answer, written after the settle, never rests on an unflushed
  // hold alone. Fails if the hold becomes a durable commit again (a WAL flush more per call) or
  // the settle stops being one (an answered call whose charge a crash of PostgreSQL could lose).
  // Only the statements on a `hold:` row are read: how many a call makes is the test above's claim,
  // and a statement of the process's own that is on none (the billing sweep every minute, the other
  // server's background reads) could fall in the counted window on a slow host and fail this one
  // for what it does not claim.
  it.runIf(store.name === 'postgres')(
    'the hold commits asynchronously and the settle durably, streamed or not, on both paths',
    async () => {
      const admin = await tokenFor('v1rt-admin', { admin: true });
      const modes: Record<string, string[]> = {};
      for (const [path, gw] of servers) {
        const sub = `v1rt-modes-${path}`;
        await creditTokens(gw.url, admin, sub, 1_000_000, sub);
        const client = new OpenAI({ baseURL: gw.url + '/v1', apiKey: await tokenFor(sub), maxRetries: 0 });
        const messages = [{ role: 'user' as const, content: 'count me' }];
        const closed = () => waitFor(async () => (gw.runtime.billing.openHolds() === 0 ? true : undefined), { what: 'the settle' });
        for (let i = 0; i < 3; i++) await client.chat.completions.create({ model: 'openai/gpt-4.1-mini', messages });
        await closed();
        await gw.runtime.users.settled();
        for (const stream of [false, true]) {
          const pgQuery = vi.spyOn(pg.Client.prototype, 'query');
          try {
            if (stream) {
              for await (const _ of await client.chat.completions.create({ model: 'openai/gpt-4.1-mini', messages, stream: true }));
            } else await client.chat.completions.create({ model: 'openai/gpt-4.1-mini', messages });
            await closed();
            modes[`${path}${stream ? ' streamed' : ''}`] = pgQuery.mock.calls.map(commitMode).filter((m) => /^(hold|settle): /.test(m));
          } finally {
            pgQuery.mockRestore();
          }
        }
      }
      const holdThenSettle = ['hold: async', 'settle: durable'];
      expect(modes).toEqual({
        sdk: holdThenSettle,
        'sdk streamed': holdThenSettle,
        'pass-through': holdThenSettle,
        'pass-through streamed': holdThenSettle,
      });
    },
  );
});

/** Billing sweeps of this suite's servers: how many run now, how many have started. */
interface Sweeps {
  running: number;
  started: number;
}

/**
 * Note each billing sweep of `gw` in `sweeps`. Its timer (BillingService.start) calls the
 * instance's method, so a wrapper there sees every round.
 */
function watchSweeps(gw: AiServer, sweeps: Sweeps): void {
  const billing = gw.runtime.billing;
  const sweep = billing.sweepExpiredReservations.bind(billing);
  vi.spyOn(billing, 'sweepExpiredReservations').mockImplementation(async (now) => {
    sweeps.running++;
    sweeps.started++;
    try {
      return await sweep(now);
    } finally {
      sweeps.running--;
    }
  });
}

/**
 * The PostgreSQL statements and Redis commands sent while `call` runs, less the background ones
 * no call makes (see background), counted in a window no billing sweep overlapped: a sweep's
 * reads are no request of the call, and a call it overlapped is made and counted again (a sweep
 * runs once a minute per server, so a second window is clear of it). Every window counts all a
 * call sends: a call that made a third request counts three each time.
 */
async function countQuiet(sweeps: Sweeps, call: () => Promise<void>): Promise<number> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const quiet = sweeps.running === 0;
    const startedBefore = sweeps.started;
    const pgQuery = vi.spyOn(pg.Client.prototype, 'query');
    const redisSend = vi.spyOn(Redis.prototype, 'sendCommand');
    try {
      await call();
      if (quiet && sweeps.started === startedBefore)
        return [...pgQuery.mock.calls, ...redisSend.mock.calls].filter((args) => !background(args)).length;
    } finally {
      pgQuery.mockRestore();
      redisSend.mockRestore();
    }
  }
  throw new Error('a billing sweep overlapped each of three counted calls');
}

/**
 * How a statement commits: a transaction's `aib_tx` call with `synchronous_commit` set off in the
 * statement itself (PostgresStorage's TX_CALL_ASYNC) or on the connection's setting (durable).
 * Named by what a warm call's transactions are: the first writes a `hold:` row, the second deletes
 * it; a transaction on no `hold:` row is `other`, any other statement its first 40 characters.
 */
function commitMode(args: unknown[]): string {
  const q = args[0] as { text?: string; values?: unknown[] } | string;
  const text = typeof q === 'string' ? q : (q.text ?? '');
  if (!/\baib_tx\(/.test(text)) return text.slice(0, 40);
  const values = typeof q === 'string' ? [] : (q.values ?? []);
  // $4 (the keys set) and $8 (the keys deleted) as sent: array literals (storage/sql/arrayLiteral.ts).
  const holdIn = (literal: unknown) => /[{,]"hold:/.test(String(literal ?? ''));
  const kind = holdIn(values[3]) ? 'hold' : holdIn(values[7]) ? 'settle' : 'other';
  return `${kind}: ${/set_config\('synchronous_commit', 'off'/.test(text) ? 'async' : 'durable'}`;
}

/**
 * Not a call's request: the MCP gateway's periodic read of its server list (every instance polls
 * it), the statistics' periodic flush of the day rows (`stats:` keys, every instance; on Redis
 * behind the key prefix), the MCP session counts' beat (`mcpbudget:`) and PostgreSQL's schema
 * check (on each new pool connection).
 */
function background(args: unknown[]): boolean {
  const first = args[0] as { values?: unknown; args?: unknown } | string | undefined;
  const parts = [
    first,
    args[1],
    typeof first === 'object' ? first?.values : undefined,
    typeof first === 'object' ? first?.args : undefined,
  ];
  return parts.some((p) => {
    try {
      const text = typeof p === 'string' ? p : (JSON.stringify(p) ?? '');
      return /gateway:servers|(^|["':])stats:|mcpbudget:|schema_migrations/.test(text);
    } catch {
      return false;
    }
  });
}
