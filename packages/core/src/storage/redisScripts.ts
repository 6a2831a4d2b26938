/**
 * Lua scripts of the redis backend. Each runs atomically on the server, so compare-and-set and
 * increment-with-floor stay correct with any number of servers sharing one Redis.
 * Values are stored as canonical JSON text (see canonicalJson.ts), which makes "deep-equal"
 * a plain string comparison here.
 */

/**
 * The listing indexes (RedisOwnerIndex.ts), Lua functions the writing scripts end with. A key has up
 * to two: its owner group's (`oidx`, `<keyPrefix>idx:<group>`) and its family's (`fidx`,
 * `<keyPrefix>fidx:<family>`, with `fexp`, `<keyPrefix>fexp:<family>`), each '' when it has none;
 * both are sorted sets of keys, all score 0, read by lexical range. indexKeys runs after a write:
 * it lists the key while it exists, and unindexKeys runs with a delete. Keys that expire (Redis says
 * nothing) are pruned two ways. An owner index lives as long as its longest-lived key (persistent
 * when one key is), so an index of expiring keys (an MCP session's workspaces) goes with them. A
 * family index lives on (a family outlives its keys): `fexp` holds its expiring keys scored by when
 * they expire, and every indexed write of the family drops up to 8 keys past that time (so the
 * index shrinks as fast as expiring keys are written). A listing drops what it finds gone.
 */
export const INDEX_LUA = `
local function indexOwner(idx, member, key, kt)
  if idx == '' then return end
  if kt == -2 then redis.call('ZREM', idx, member) return end
  local it = redis.call('PTTL', idx)
  redis.call('ZADD', idx, 0, member)
  if kt == -1 then
    if it >= 0 then redis.call('PERSIST', idx) end
  elseif it == -2 or (it >= 0 and it < kt) then
    redis.call('PEXPIRE', idx, kt)
  end
end
local function indexFamily(fidx, fexp, member, key, kt)
  if fidx == '' then return end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if kt == -2 then
    redis.call('ZREM', fidx, member)
    redis.call('ZREM', fexp, member)
  else
    redis.call('ZADD', fidx, 0, member)
    if kt == -1 then redis.call('ZREM', fexp, member) else redis.call('ZADD', fexp, now + kt, member) end
  end
  local kv = string.sub(key, 1, #key - #member)
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', fexp, '-inf', now, 'LIMIT', 0, 8)) do
    local left = redis.call('PTTL', kv .. m)
    if left == -2 then
      redis.call('ZREM', fidx, m)
      redis.call('ZREM', fexp, m)
    elseif left == -1 then
      redis.call('ZREM', fexp, m)
    else
      redis.call('ZADD', fexp, now + left, m)
    end
  end
end
local function indexKeys(oidx, fidx, fexp, member, key)
  if oidx == '' and fidx == '' then return end
  local kt = redis.call('PTTL', key)
  indexOwner(oidx, member, key, kt)
  indexFamily(fidx, fexp, member, key, kt)
end
local function unindexKeys(oidx, fidx, fexp, member)
  if oidx ~= '' then redis.call('ZREM', oidx, member) end
  if fidx ~= '' then
    redis.call('ZREM', fidx, member)
    redis.call('ZREM', fexp, member)
  end
end
`;

/**
 * KEYS[1] key; ARGV: mode ('absent' | 'equal'), expected JSON, new JSON, ttl ms or '', the key's
 * indexes (oidx, fidx, fexp: INDEX_LUA) and the key. Returns 1 if written.
 */
export const CAS_SCRIPT = `${INDEX_LUA}
local cur = redis.call('GET', KEYS[1])
if ARGV[1] == 'absent' then
  if cur then return 0 end
elseif cur ~= ARGV[2] then
  return 0
end
if ARGV[4] == '' then
  redis.call('SET', KEYS[1], ARGV[3])
else
  redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
end
indexKeys(ARGV[5], ARGV[6], ARGV[7], ARGV[8], KEYS[1])
return 1
`;

/**
 * KEYS[1] counter; ARGV: delta, min or '', ttl ms or '' (applied only when the counter is created),
 * the counter's indexes (oidx, fidx, fexp: INDEX_LUA) and the key.
 * Returns the new value (integer, or text for non-integers) or nil when the floor would be crossed.
 * Integer counters go through INCRBY (exact 64-bit, keeps the expiry); a value that is not a
 * number counts as 0 and is replaced, keeping its expiry, as in MemoryStorage.
 */
export const INCREMENT_SCRIPT = `${INDEX_LUA}
local cur = redis.call('GET', KEYS[1])
local delta = tonumber(ARGV[1])
local n = nil
if cur then n = tonumber(cur) end
local base = n or 0
if ARGV[2] ~= '' and base + delta < tonumber(ARGV[2]) then return nil end
if n and string.match(cur, '^-?%d+$') and string.match(ARGV[1], '^-?%d+$') then
  local sum = redis.call('INCRBY', KEYS[1], ARGV[1])
  indexKeys(ARGV[4], ARGV[5], ARGV[6], ARGV[7], KEYS[1])
  return sum
end
local text = string.format('%.17g', base + delta)
if cur then
  redis.call('SET', KEYS[1], text, 'KEEPTTL')
elseif ARGV[3] ~= '' then
  redis.call('SET', KEYS[1], text, 'PX', ARGV[3])
else
  redis.call('SET', KEYS[1], text)
end
indexKeys(ARGV[4], ARGV[5], ARGV[6], ARGV[7], KEYS[1])
return text
`;

/**
 * The store's identity check (RedisStorage.storeId), a Lua function the scripts below start with:
 * false when `<keyPrefix>storeid` still holds this server's id; otherwise what it found ('' for
 * absent: Redis restarted empty or flushed; another id: a server started afresh on the emptied
 * keys; 'lost…': another server found this already), after marking the key 'lost' so that every
 * server, and every later start, refuses the store too. An empty `id` (not read yet) checks nothing.
 */
const STORE_LOST = `
local function storeLost(idKey, id)
  if id == '' then return false end
  local cur = redis.call('GET', idKey)
  if cur == id then return false end
  if not cur or string.sub(cur, 1, 4) ~= 'lost' then redis.call('SET', idKey, 'lost') end
  return cur or ''
end
`;

/**
 * Read the store's identity at start (ARGV[1] = '', ARGV[2] = a new id: kept when none is there,
 * so the first server of a new store names it) or check it later (ARGV[1] = the id read then).
 * KEYS[1]: `<keyPrefix>storeid`. Returns {1, the id} or {2, what was found instead}.
 */
export const STORE_ID_SCRIPT = `${STORE_LOST}
if ARGV[1] == '' then
  local cur = redis.call('GET', KEYS[1])
  if cur then
    if string.sub(cur, 1, 4) == 'lost' then return {2, cur} end
    return {1, cur}
  end
  redis.call('SET', KEYS[1], ARGV[2])
  return {1, ARGV[2]}
end
local found = storeLost(KEYS[1], ARGV[1])
if found then return {2, found} end
return {1, ARGV[1]}
`;

/**
 * Lock and read, the first half of a transaction. KEYS[1..n]: the keys' lock rows, KEYS[n+1..2n]:
 * the keys (prefixed). ARGV: this transaction's token, the lock lease in ms, the store's identity
 * key and the id this server read (STORE_LOST: {2, what was found} when it changed). All locks or
 * none: when another transaction holds one, returns {0, its remaining lease in ms}; otherwise
 * takes every lock for the lease and returns {1, value of each key ('' = absent)}.
 */
export const LOCK_READ_SCRIPT = `${STORE_LOST}
local lost = storeLost(ARGV[3], ARGV[4])
if lost then return {2, lost} end
local n = #KEYS / 2
for i = 1, n do
  local cur = redis.call('GET', KEYS[i])
  if cur and cur ~= ARGV[1] then return {0, redis.call('PTTL', KEYS[i])} end
end
local values = {}
for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  values[i] = redis.call('GET', KEYS[n + i]) or ''
end
return {1, values}
`;

/**
 * The second half: write and unlock. KEYS as in LOCK_READ_SCRIPT. ARGV[1]: the token;
 * ARGV[2..n+1]: the values read; ARGV[n+2..n+4]: the kv prefix, the log prefix and the due-index
 * key; ARGV[n+5..n+6]: the store's identity key and id (STORE_LOST: nothing written, {2, what was
 * found}, when the store is not the one this server read); ARGV[n+7]: the log index (a log's name
 * joins it when its first record is appended); then the writes, in order, as plain arguments:
 * 's', key, json, px|'', dueAt|'', oidx, fidx, fexp (a set), 'd', key, oidx, fidx, fexp (a delete)
 * or 'a', log, json (an append); the indexes as in INDEX_LUA. Writes nothing and returns 0 when another
 * transaction holds a lock (this one's lease ran out and another took it) or a key changed since
 * it was read (a write outside transactions, or a transaction that took an expired lock and
 * committed); otherwise applies every write, drops the locks, returns 1. A lock that merely
 * expired (nobody took it) does not stop the commit: the value check alone proves nothing
 * changed, so a holder slowed down past its lease by a busy event loop does not start over.
 */
export const COMMIT_SCRIPT = `${STORE_LOST}${INDEX_LUA}
local n = #KEYS / 2
local lost = storeLost(ARGV[n + 5], ARGV[n + 6])
if lost then return {2, lost} end
for i = 1, n do
  local lock = redis.call('GET', KEYS[i])
  if lock and lock ~= ARGV[1] then return 0 end
end
for i = 1, n do
  local cur = redis.call('GET', KEYS[n + i])
  if cur == false then cur = '' end
  if cur ~= ARGV[i + 1] then
    redis.call('DEL', unpack(KEYS, 1, n))
    return 0
  end
end
local kv, logs, due, logIndex = ARGV[n + 2], ARGV[n + 3], ARGV[n + 4], ARGV[n + 7]
local i = n + 8
while i <= #ARGV do
  local op, key = ARGV[i], ARGV[i + 1]
  if op == 's' then
    if ARGV[i + 3] == '' then redis.call('SET', kv .. key, ARGV[i + 2]) else redis.call('SET', kv .. key, ARGV[i + 2], 'PX', ARGV[i + 3]) end
    if ARGV[i + 4] == '' then redis.call('ZREM', due, key) else redis.call('ZADD', due, ARGV[i + 4], key) end
    indexKeys(ARGV[i + 5], ARGV[i + 6], ARGV[i + 7], key, kv .. key)
    i = i + 8
  elseif op == 'd' then
    redis.call('DEL', kv .. key)
    redis.call('ZREM', due, key)
    unindexKeys(ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], key)
    i = i + 5
  else
    if redis.call('RPUSH', logs .. key, ARGV[i + 2]) == 1 then redis.call('ZADD', logIndex, 0, key) end
    i = i + 3
  end
end
if n > 0 then redis.call('DEL', unpack(KEYS, 1, n)) end
return 1
`;

/** Drop the locks (KEYS) this transaction (ARGV[1]) still holds: its plan wrote nothing or threw. */
export const UNLOCK_SCRIPT = `
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then redis.call('DEL', KEYS[i]) end
end
return 1
`;
