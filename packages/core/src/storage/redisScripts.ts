/**
 * Lua scripts of the redis backend. Each runs atomically on the server, so compare-and-set and
 * increment-with-floor stay correct with any number of servers sharing one Redis.
 * Values are stored as canonical JSON text (see canonicalJson.ts), which makes "deep-equal"
 * a plain string comparison here.
 */

/** KEYS[1] key; ARGV: mode ('absent' | 'equal'), expected JSON, new JSON, ttl ms or ''. Returns 1 if written. */
export const CAS_SCRIPT = `
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
return 1
`;

/**
 * KEYS[1] counter; ARGV: delta, min or '', ttl ms or '' (applied only when the counter is created).
 * Returns the new value (integer, or text for non-integers) or nil when the floor would be crossed.
 * Integer counters go through INCRBY (exact 64-bit, keeps the expiry); a value that is not a
 * number counts as 0 and is replaced, keeping its expiry, as in MemoryStorage.
 */
export const INCREMENT_SCRIPT = `
local cur = redis.call('GET', KEYS[1])
local delta = tonumber(ARGV[1])
local n = nil
if cur then n = tonumber(cur) end
local base = n or 0
if ARGV[2] ~= '' and base + delta < tonumber(ARGV[2]) then return nil end
if n and string.match(cur, '^-?%d+$') and string.match(ARGV[1], '^-?%d+$') then
  return redis.call('INCRBY', KEYS[1], ARGV[1])
end
local text = string.format('%.17g', base + delta)
if cur then
  redis.call('SET', KEYS[1], text, 'KEEPTTL')
elseif ARGV[3] ~= '' then
  redis.call('SET', KEYS[1], text, 'PX', ARGV[3])
else
  redis.call('SET', KEYS[1], text)
end
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
 * found}, when the store is not the one this server read); then the writes, in order, as plain
 * arguments: 's', key, json, px|'', dueAt|'' (a set), 'd', key (a delete) or 'a', log, json (an
 * append). Writes nothing and returns 0 when another
 * transaction holds a lock (this one's lease ran out and another took it) or a key changed since
 * it was read (a write outside transactions, or a transaction that took an expired lock and
 * committed); otherwise applies every write, drops the locks, returns 1. A lock that merely
 * expired (nobody took it) does not stop the commit: the value check alone proves nothing
 * changed, so a holder slowed down past its lease by a busy event loop does not start over.
 */
export const COMMIT_SCRIPT = `${STORE_LOST}
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
local kv, logs, due = ARGV[n + 2], ARGV[n + 3], ARGV[n + 4]
local i = n + 7
while i <= #ARGV do
  local op, key = ARGV[i], ARGV[i + 1]
  if op == 's' then
    if ARGV[i + 3] == '' then redis.call('SET', kv .. key, ARGV[i + 2]) else redis.call('SET', kv .. key, ARGV[i + 2], 'PX', ARGV[i + 3]) end
    if ARGV[i + 4] == '' then redis.call('ZREM', due, key) else redis.call('ZADD', due, ARGV[i + 4], key) end
    i = i + 5
  elseif op == 'd' then
    redis.call('DEL', kv .. key)
    redis.call('ZREM', due, key)
    i = i + 2
  else
    redis.call('RPUSH', logs .. key, ARGV[i + 2])
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
