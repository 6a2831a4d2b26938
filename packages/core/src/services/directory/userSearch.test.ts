import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitFor } from '@ai-backend/test-utils';
import {
  dropTestKeys,
  dropTestSchema,
  testPostgres,
  testPostgresOptions,
  testRedis,
  testRedisOptions,
} from '@ai-backend/test-utils/services';
import type { Storage } from '../../kernel/Storage.js';
import { RedisStorage } from '../../storage/RedisStorage.js';
import { PostgresStorage } from '../../storage/sql/PostgresStorage.js';
import { SqliteStorage } from '../../storage/sql/SqliteStorage.js';
import { resolveConfig } from '../../config/resolveConfig.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import type { Identity } from '../../kernel/identity.js';
import { UserDirectory } from './UserDirectory.js';
import { indexUser } from './userSearchIndex.js';

const who = (sub: string, email?: string): Identity => ({ sub, scopes: [], isAdmin: false, via: 'jwt', ...(email ? { email } : {}) });

/** A directory that saw `users` in order (the profile and the index written as `seen` writes them). */
async function directoryOf(users: Array<[string, string?]>): Promise<{ dir: UserDirectory; storage: MemoryStorage }> {
  const storage = new MemoryStorage();
  const dir = new UserDirectory(storage, resolveConfig({}));
  for (const [sub, email] of users) {
    dir.seen(who(sub, email));
    await waitFor(async () => (await storage.get(`user:indexed:${sub}`)) !== undefined, { what: `${sub} indexed` });
  }
  return { dir, storage };
}

describe('user search', () => {
  it('finds any part of an id or e-mail, ignoring case, most recently indexed first', async () => {
    const { dir } = await directoryOf([
      ['auth0|Alice-1', 'Alice.Smith@Example.com'],
      ['bob', 'bob@corp.io'],
      ['carol', 'carol@example.com'],
      ['dave'],
    ]);
    const subs = async (q: string) => (await dir.search(q, { limit: 20, maxScanned: 100 })).subs;
    expect(await subs('EXAMPLE.COM')).toEqual(['carol', 'auth0|Alice-1']);
    expect(await subs('alice-')).toEqual(['auth0|Alice-1']);
    expect(await subs('smith@')).toEqual(['auth0|Alice-1']);
    expect(await subs('corp')).toEqual(['bob']);
    expect(await subs('av')).toEqual(['dave']);
    expect(await subs('nobody')).toEqual([]);
  });

  it('indexes a user once, again only when their e-mail changes; an old e-mail no longer finds them', async () => {
    const { dir, storage } = await directoryOf([['erin', 'erin@old.example']]);
    await indexUser(storage, 'erin', 'ERIN@old.example'); // the same address: nothing appended
    expect(await storage.readLog('user:directory')).toHaveLength(1);
    await indexUser(storage, 'erin', 'erin@new.example');
    await storage.set('user:profile:erin', {
      sub: 'erin',
      email: 'erin@new.example',
      scopes: [],
      isAdmin: false,
      via: 'jwt',
      lastSeenAt: new Date().toISOString(),
    });
    expect(await storage.readLog('user:directory')).toHaveLength(2);
    expect((await dir.search('new.example', { limit: 20, maxScanned: 100 })).subs).toEqual(['erin']);
    expect((await dir.search('old.example', { limit: 20, maxScanned: 100 })).subs).toEqual([]);
  });

  it('examines at most maxScanned entries per search and pages on with a cursor', async () => {
    const storage = new MemoryStorage();
    const dir = new UserDirectory(storage, resolveConfig({}));
    for (let i = 0; i < 30; i++) {
      await indexUser(storage, `user-${i}`, i % 10 === 0 ? `match-${i}@x.io` : undefined);
      await storage.set(`user:profile:user-${i}`, {
        sub: `user-${i}`,
        ...(i % 10 === 0 ? { email: `match-${i}@x.io` } : {}),
        scopes: [],
        isAdmin: false,
        via: 'jwt',
        lastSeenAt: '',
      });
    }
    // Newest first: user-29 … user-0; matches at 20, 10, 0.
    const first = await dir.search('MATCH', { limit: 20, maxScanned: 12 });
    expect(first.scanned).toBe(12);
    expect(first.subs).toEqual(['user-20']);
    expect(first.nextCursor).toBeDefined();
    const second = await dir.search('match', { limit: 20, maxScanned: 12, cursor: first.nextCursor });
    expect(second.subs).toEqual(['user-10']);
    const third = await dir.search('match', { limit: 20, maxScanned: 12, cursor: second.nextCursor });
    expect(third.subs).toEqual(['user-0']);
    expect(third.nextCursor).toBeUndefined();
    // A full page stops early, with a cursor to the rest.
    const one = await dir.search('match', { limit: 1, maxScanned: 100 });
    expect(one.subs).toEqual(['user-20']);
    expect((await dir.search('match', { limit: 5, maxScanned: 100, cursor: one.nextCursor })).subs).toEqual(['user-10', 'user-0']);
  });
});

const redis = await testRedis();
const postgres = await testPostgres();
const stores: Array<{ name: string; ok: boolean; open(): Promise<{ store: Storage; cleanup(): Promise<void> }> }> = [
  {
    name: 'sqlite',
    ok: true,
    open: async () => {
      const dir = await mkdtemp(join(tmpdir(), 'user-search-'));
      const store = await SqliteStorage.open({ file: join(dir, 'data.db') });
      return {
        store,
        cleanup: async () => {
          await store.close();
          await rm(dir, { recursive: true, force: true });
        },
      };
    },
  },
  {
    name: 'postgres',
    ok: postgres.ok,
    open: async () => {
      const opts = testPostgresOptions(postgres, 'usersearch');
      const store = await PostgresStorage.connect(opts);
      return {
        store,
        cleanup: async () => {
          await store.close();
          await dropTestSchema(postgres, opts.schema);
        },
      };
    },
  },
  {
    name: 'redis',
    ok: redis.ok,
    open: async () => {
      const opts = testRedisOptions(redis, 'usersearch');
      const store = await RedisStorage.connect(opts);
      return {
        store,
        cleanup: async () => {
          await store.close();
          await dropTestKeys(redis, opts.keyPrefix);
        },
      };
    },
  },
];

for (const backend of stores) {
  describe.skipIf(!backend.ok)(`user search on ${backend.name}`, () => {
    it('substring, case, and bounded pages read the index the same way', async () => {
      const { store, cleanup } = await backend.open();
      try {
        const dir = new UserDirectory(store, resolveConfig({}));
        for (let i = 0; i < 12; i++) {
          const email = i % 4 === 0 ? `Ops-${i}@ACME.example` : `user-${i}@other.example`;
          await indexUser(store, `sub-${i}`, email);
          await store.set(`user:profile:sub-${i}`, { sub: `sub-${i}`, email, scopes: [], isAdmin: false, via: 'jwt', lastSeenAt: '' });
        }
        expect((await dir.search('acme', { limit: 20, maxScanned: 100 })).subs).toEqual(['sub-8', 'sub-4', 'sub-0']);
        const first = await dir.search('@ACME.', { limit: 20, maxScanned: 5 });
        expect(first).toMatchObject({ subs: ['sub-8'], scanned: 5 });
        const rest = await dir.search('@acme.', { limit: 20, maxScanned: 100, cursor: first.nextCursor });
        expect(rest.subs).toEqual(['sub-4', 'sub-0']);
        expect(rest.nextCursor).toBeUndefined();
      } finally {
        await cleanup();
      }
    });
  });
}
