/**
 * The console's own load on the server: what opening the overview (admin.overview) and a user's
 * view (admin.getUserInfo, admin.userUsage, one ledger page) read from the store does not grow
 * with the ledger. Measured against the same server before and after one user's usage log and
 * purchase log grow by 200,000 entries each, through a store that counts every key it reads.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerKeys, MemoryStorage, type Storage } from '@ai-backend/core/internal';
import { createTestUpstream, creditTokens, rpcCall, startAiServer, tokenFor, type AiServer, type TestUpstream } from './helpers/aiGateway.js';

const HEAVY = 'heavy-user';
const ENTRIES = 200_000;

/** Keys read per method, counted on every read path of the Storage interface. */
class CountingStorage {
  reads = { get: 0, getMany: 0, keys: 0, readLog: 0, transactKeys: 0 };
  readonly storage: Storage;
  constructor(inner: Storage) {
    const reads = this.reads;
    this.storage = new Proxy(inner, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof value !== 'function') return value;
        const fn = value as (...args: unknown[]) => unknown;
        return async (...args: unknown[]) => {
          const out = await fn.apply(target, args);
          if (prop === 'get') reads.get++;
          else if (prop === 'getMany') reads.getMany += (args[0] as unknown[]).length;
          else if (prop === 'keys') reads.keys += (out as unknown[]).length;
          else if (prop === 'readLog') reads.readLog += (out as unknown[]).length;
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
  gw = await startAiServer(upstream, { storage: { type: 'memory' }, admin: { users: ['console-load-admin'] }, statistics: { enabled: false } }, { storage: counting.storage });
  admin = await tokenFor('console-load-admin', { admin: true });
  await creditTokens(gw.url, admin, HEAVY, 1_000_000, 'load-seed');
  const user = await tokenFor(HEAVY);
  for (let i = 0; i < 3; i++) expect((await rpcCall(gw.url, user, 'ai.generateText', { content: `call ${i}`, systemPrompt: 's', provider: 'openai', options: { maxTokens: 20 } })).result).toBeDefined();
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
});

/** Store reads of the overview and of the heavy user's view, one fresh measurement each. */
async function measure(): Promise<{ overview: number; userView: number }> {
  counting.reset();
  const o = await rpcCall(gw.url, admin, 'admin.overview', { days: 14 });
  expect(o.result, o.text).toBeDefined();
  const overview = counting.total();
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
  return { overview, userView: counting.total() };
}

describe('the console reads no more with a 200k-entry ledger', () => {
  it('overview and user view read the same number of keys before and after the ledger grows by 200k', async () => {
    const inner = counting.storage;
    const usage = ledgerKeys.usage(HEAVY);
    const purchases = ledgerKeys.purchases(HEAVY);
    const at = new Date().toISOString();
    const grow = async (from: number, to: number) => {
      for (let i = from; i < to; i++) {
        await inner.append(usage, { id: `u${i}`, at, mode: 'platform', provider: 'openai', model: 'gpt-4.1-mini', tokensUsed: 10, tokensCharged: 11, platformFee: 1, estimatedCostUsd: 0.00001 });
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
    // Absolute bounds: the overview reads the global day rows (shards × 14 days) and the alert
    // backlog; the user view 30 day rows and two pages of 20 entries. Neither reads a log whole.
    expect(after.overview).toBeLessThan(400);
    expect(after.userView).toBeLessThan(200);
  }, 120_000);
});
