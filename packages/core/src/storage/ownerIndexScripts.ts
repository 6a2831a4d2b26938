import { INDEX_LUA } from './redisScripts.js';

/**
 * The Lua scripts of the Redis store's listing indexes (RedisOwnerIndex.ts) and the ioredis
 * commands they become; the writing scripts of the store itself end with INDEX_LUA too.
 */

/** A set of keys that exist, written with its indexes (KEYS[1] the key; ARGV json, px|'', oidx, fidx, fexp, key). */
export const SET_INDEXED_SCRIPT = `${INDEX_LUA}
if ARGV[2] == '' then redis.call('SET', KEYS[1], ARGV[1]) else redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) end
indexKeys(ARGV[3], ARGV[4], ARGV[5], ARGV[6], KEYS[1])
return 1
`;

/** Delete a key and its index entries (KEYS[1] the key; ARGV oidx, fidx, fexp, key). Returns how many keys went. */
export const DELETE_INDEXED_SCRIPT = `${INDEX_LUA}
local n = redis.call('DEL', KEYS[1])
unindexKeys(ARGV[1], ARGV[2], ARGV[3], ARGV[4])
return n
`;

/** Append to a log (KEYS[1] the list; ARGV json, the log index, the log's name): its name joins the index with its first record. */
export const APPEND_INDEXED_SCRIPT = `
local n = redis.call('RPUSH', KEYS[1], ARGV[1])
if n == 1 then redis.call('ZADD', ARGV[2], 0, ARGV[3]) end
return n
`;

/**
 * One page of an index: ARGV the index, its expiry set or '', the prefix of what it lists (kv or
 * log), the listing prefix, the member after which to start ('' from the first), the most members
 * to read (-1: all). Returns {the last member read, or '' when the range ended, then the members
 * whose key exists}; the others are dropped.
 */
export const LIST_INDEXED_SCRIPT = `
local idx, exp, kv, prefix, after, limit = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], tonumber(ARGV[6])
local from = after == '' and ('[' .. prefix) or ('(' .. after)
local members
if limit < 0 then
  members = redis.call('ZRANGEBYLEX', idx, from, '[' .. prefix .. string.char(255))
else
  members = redis.call('ZRANGEBYLEX', idx, from, '[' .. prefix .. string.char(255), 'LIMIT', 0, limit)
end
local out = {''}
if limit >= 0 and #members == limit and limit > 0 then out[1] = members[#members] end
for _, m in ipairs(members) do
  if redis.call('EXISTS', kv .. m) == 1 then
    out[#out + 1] = m
  else
    redis.call('ZREM', idx, m)
    if exp ~= '' then redis.call('ZREM', exp, m) end
  end
end
return out
`;

/**
 * One batch of the build: KEYS[1] the lease; ARGV the lease token, its length in ms, the kv prefix,
 * the log prefix, the log index, how many keys follow, then per key (oidx, fidx, fexp, key), then
 * log names. Renews the lease and indexes each key and log that still exists; 0 (nothing done)
 * when the lease is not this builder's anymore.
 */
const BUILD_BATCH_SCRIPT = `${INDEX_LUA}
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local kv, logs, logIndex = ARGV[3], ARGV[4], ARGV[5]
local i = 7
for _ = 1, tonumber(ARGV[6]) do
  indexKeys(ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], kv .. ARGV[i + 3])
  i = i + 4
end
for j = i, #ARGV do
  if redis.call('EXISTS', logs .. ARGV[j]) == 1 then redis.call('ZADD', logIndex, 0, ARGV[j]) end
end
return 1
`;

/**
 * KEYS[1] the lease, KEYS[2] the build mark; ARGV the token, the lease in ms. Takes the lease
 * unless the build is done (0) or another builder holds it (-1); in one step, so a builder that
 * finishes meanwhile cannot be followed by a second build. Returns 1 when taken.
 */
const BUILD_START_SCRIPT = `
if redis.call('GET', KEYS[2]) == 'done' then return 0 end
if redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return 1 end
return -1
`;

/** KEYS[1] the lease, KEYS[2] the build mark; ARGV the token. Marks the build done if the lease is still this builder's. */
const BUILD_DONE_SCRIPT = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], 'done')
redis.call('DEL', KEYS[1])
return 1
`;

export interface OwnerIndexCommands {
  storageSetIndexed(key: string, json: string, px: string, oidx: string, fidx: string, fexp: string, member: string): Promise<number>;
  storageDeleteIndexed(key: string, oidx: string, fidx: string, fexp: string, member: string): Promise<number>;
  storageAppendIndexed(list: string, json: string, logIndex: string, name: string): Promise<number>;
  storageListIndexed(idx: string, exp: string, kv: string, prefix: string, after: string, limit: string): Promise<string[]>;
  storageBuildBatch(numKeys: number, ...args: string[]): Promise<number>;
  storageBuildStart(lease: string, mark: string, token: string, leaseMs: string): Promise<number>;
  storageBuildDone(lease: string, mark: string, token: string): Promise<number>;
}

/** The ioredis `scripts` entries of the index. */
export const OWNER_INDEX_SCRIPTS = {
  storageSetIndexed: { lua: SET_INDEXED_SCRIPT, numberOfKeys: 1 },
  storageDeleteIndexed: { lua: DELETE_INDEXED_SCRIPT, numberOfKeys: 1 },
  storageAppendIndexed: { lua: APPEND_INDEXED_SCRIPT, numberOfKeys: 1 },
  storageListIndexed: { lua: LIST_INDEXED_SCRIPT, numberOfKeys: 0 },
  storageBuildBatch: { lua: BUILD_BATCH_SCRIPT },
  storageBuildStart: { lua: BUILD_START_SCRIPT, numberOfKeys: 2 },
  storageBuildDone: { lua: BUILD_DONE_SCRIPT, numberOfKeys: 2 },
};
