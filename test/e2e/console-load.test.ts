/**
 * The console's own load on the server: what opening the overview (admin.overview) and a user's
 * view (admin.getUserInfo, admin.userUsage, one ledger page) read from the store does not grow
 * with the ledger. Measured against the same server before and after one user's usage log and
 * purchase log grow by 200,000 entries each, through a store that counts every key it reads.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerKeys, MemoryStorage, type Storage } from '@ai-backend/core/internal';
import {
  createTestUpstream,
  creditTokens,
  rpcCall,
  startAiServer,
  tokenFor,
  type AiServer,
  type TestUpstream,
} from './helpers/aiGateway.js';

const HEAVY = 'heavy-user';
const ENTRIES = 200_000;

/** Keys read per method, counted on every read path of the Storage interface. */
class CountingStorage {
  reads = { get: 0, getMany: 0, keys: 0, readLog: 0, transactKeys: 0 };
  /** Prefixes of key listings: on Redis each is a SCAN of the whole keyspace, so it grows with everything stored. */
  listings: string[] = [];
  readonly storage: Storage;
  constructor(inner: Storage) {
    const reads = this.reads;
    const listings = this.listings;
    this.storage = new Proxy(inner, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof value !== 'function') return value;
        const fn = value as (...args: unknown[]) => unknown;
        return async (...args: unknown[]) => {
          const out = await fn.apply(target, args);
          if (prop === 'get') reads.get++;
          else if (prop === 'getMany') reads.getMany += (args[0] as unknown[]).length;
          else if (prop === 'keys') {
            reads.keys += (out as unknown[]).length;
            listings.push(args[0] as string);
          } else if (prop === 'readLog') reads.readLog += (out as unknown[]).length;
          else if (prop === 'transact') reads.transactKeys += (args[0] as unknown[]).length;
          return out;
        };
      },
    });
  }
  total(): number {
    return Object.values(this.reads).reduce((a, b) => a + b, 0);
  }
  reset(): void {
    for (const k of Object.keys(this.reads) as Array<keyof typeof this.reads>) this.reads[k] = 0;
    this.listings.length = 0;
  }
}

let upstream: TestUpstream;
let gw: AiServer;
let counting: CountingStorage;
let admin: string;

beforeAll(async () => {
  upstream = await createTestUpstream();
  const inner = new MemoryStorage();
  counting = new CountingStorage(inner);
  // Statistics flush on their own timer: off here, so only the measured calls read the store.
  gw = await startAiServer(
    upstream,
    { storage: { type: 'memory' }, admin: { users: ['console-load-admin'] }, statistics: { flushIntervalMs: 600_000 } },
    { storage: counting.storage },
  );
  admin = await tokenFor('console-load-admin', { admin: true });
  await creditTokens(gw.url, admin, HEAVY, 1_000_000, 'load-seed');
  for (let i = 0; i < 3; i++) await meteredCall(`call ${i}`);
  // The upstream statistics of those calls in the store (the timer is off here).
  await gw.runtime.stats.flush();
}, 60_000);

/** One metered call of the heavy user. */
async function meteredCall(content: string): Promise<void> {
  const user = await tokenFor(HEAVY);
  const r = await rpcCall(gw.url, user, 'ai.generateText', { content, systemPrompt: 's', provider: 'openai', options: { maxTokens: 20 } });
  expect(r.result, r.text).toBeDefined();
}

afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
});

/** Store reads of the overview, of the heavy user's view and of a user search, one fresh measurement each. */
async function measure(): Promise<{
  overview: number;
  userView: number;
  search: number;
  listings: { overview: string[]; userView: string[]; search: string[] };
}> {
  // A call first: the overview's usage answer is then computed afresh, as on an instance under
  // traffic, not served again from the last one (docs/console.md, "Usage figures").
  await meteredCall('before a measurement');
  // The statistics of the calls before this one are written now, not by the overview's own read
  // (what a flush writes depends on those calls, not on the console).
  await gw.runtime.stats.flush();
  counting.reset();
  const o = await rpcCall(gw.url, admin, 'admin.overview', { days: 14 });
  expect(o.result, o.text).toBeDefined();
  // The series over time are in this one answer (statistics on: upstream rows read per day).
  expect(o.result.series.byProvider.map((p: { key: string }) => p.key)).toContain('openai');
  const overview = counting.total();
  const overviewListings = [...counting.listings];
  counting.reset();
  const found = await rpcCall(gw.url, admin, 'admin.findUsers', { query: 'HEAVY' });
  expect(
    found.result.users.map((u: { userId: string }) => u.userId),
    found.text,
  ).toContain(HEAVY);
  const search = counting.total();
  const searchListings = [...counting.listings];
  counting.reset();
  for (const [method, params] of [
    ['admin.getUserInfo', { userId: HEAVY, includeUsage: true }],
    ['admin.userUsage', { userId: HEAVY, days: 30 }],
    ['admin.userActivity', { userId: HEAVY, kind: 'usage', limit: 20 }],
    ['admin.userActivity', { userId: HEAVY, kind: 'purchases', limit: 20 }],
  ] as const) {
    const r = await rpcCall(gw.url, admin, method, params);
    expect(r.result, r.text).toBeDefined();
  }
  const userView = counting.total();
  return { overview, userView, search, listings: { overview: overviewListings, userView: [...counting.listings], search: searchListings } };
}

describe('the console reads no more with a 200k-entry ledger', () => {
  it('overview and user view read the same number of keys before and after the ledger grows by 200k', async () => {
    const inner = counting.storage;
    const usage = ledgerKeys.usage(HEAVY);
    const purchases = ledgerKeys.purchases(HEAVY);
    const at = new Date().toISOString();
    const grow = async (from: number, to: number) => {
      for (let i = from; i < to; i++) {
        await inner.append(usage, {
          id: `u${i}`,
          at,
          mode: 'platform',
          provider: 'openai',
          model: 'gpt-4.1-mini',
          tokensUsed: 10,
          tokensCharged: 11,
          platformFee: 1,
          estimatedCostUsd: 0.00001,
        });
        await inner.append(purchases, { id: `p${i}`, at, type: 'one_time', tokens: 1, source: 'admin' });
      }
    };
    // Before: more entries than one page, so a page reads a full page either way.
    await grow(0, 30);
    await measure(); // warm: first-call work (profiles, caches) is not the console's steady load
    const before = await measure();
    await grow(30, ENTRIES);
    // The seeding outlasted the server's keep-alive: let fetch drop the idle socket it would reuse.
    for (let i = 0; i < 2; i++) await fetch(`${gw.url}/health`).catch(() => undefined);
    const after = await measure();
    expect(after.overview).toBe(before.overview);
    expect(after.userView).toBe(before.userView);
    expect(after.search).toBe(before.search);
    // Absolute bounds: the overview reads the global day rows (shards × 14 days) and the alert
    // backlog; the user view 30 day rows and two pages of 20 entries. Neither reads a log whole.
    expect(after.overview).toBeLessThan(400);
    expect(after.userView).toBeLessThan(200);
    expect(after.search).toBeLessThan(50);
    // Key listings: the statistics and the user search list none; what remains is the alert outbox
    // (which every instance also lists to deliver) and the user's own key prefixes (BYOK vault, API
    // keys). On SQL those are index ranges; on Redis a SCAN (docs/console.md, "Load and size").
    expect([...new Set(after.listings.overview)].sort()).toEqual(['alerts:dead:', 'alerts:outbox:']);
    expect([...new Set(after.listings.userView)].sort()).toEqual([`apikeyowner:${HEAVY}:`, `vault:${HEAVY}:`]);
    expect(after.listings.search).toEqual([]);
  }, 120_000);

  it('a user search examines at most 5,000 index entries however many users there are, and pages on with a cursor', async () => {
    // 12,000 more users in the search index (as the directory appends them when it first sees a user).
    for (let i = 0; i < 12_000; i++)
      await counting.storage.append('user:directory', { sub: `crowd-${i}`, email: `crowd-${i}@load.example` });
    counting.reset();
    const first = (await rpcCall(gw.url, admin, 'admin.findUsers', { query: 'heavy' })).result as {
      users: Array<{ userId: string }>;
      scanned: number;
      nextCursor?: number;
    };
    expect(counting.reads.readLog).toBeLessThanOrEqual(5000);
    expect(first.scanned).toBe(5000);
    expect(first.users).toEqual([]);
    expect(first.nextCursor).toBeDefined();
    // Paging on reaches the heavy user, indexed before the crowd, each page as bounded.
    let cursor = first.nextCursor;
    let pages = 1;
    let found: string[] = [];
    while (cursor !== undefined && found.length === 0) {
      counting.reset();
      const page = (await rpcCall(gw.url, admin, 'admin.findUsers', { query: 'heavy', cursor })).result as {
        users: Array<{ userId: string }>;
        nextCursor?: number;
      };
      expect(counting.reads.readLog).toBeLessThanOrEqual(5000);
      found = page.users.map((u) => u.userId);
      cursor = page.nextCursor;
      pages++;
    }
    expect(found).toContain(HEAVY);
    expect(pages).toBe(3);
  }, 120_000);
});
