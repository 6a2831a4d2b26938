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
 * An optimistic transaction. KEYS: the keys read (prefixed). ARGV[1]: their count n;
 * ARGV[2..n+1]: the values read ('' = absent); ARGV[n+2]: the writes as JSON
 * ([['s', key, json, px|'', dueAt|''] | ['d', key] | ['a', log, json]]); ARGV[n+3..n+5]: the kv
 * prefix, the log prefix and the due-index key. Returns 0 (nothing written) when a key changed
 * since it was read, 1 when every write was applied.
 */
export const TRANSACT_SCRIPT = `
local n = tonumber(ARGV[1])
for i = 1, n do
  local cur = redis.call('GET', KEYS[i])
  if cur == false then cur = '' end
  if cur ~= ARGV[i + 1] then return 0 end
end
local writes = cjson.decode(ARGV[n + 2])
local kv, logs, due = ARGV[n + 3], ARGV[n + 4], ARGV[n + 5]
for _, w in ipairs(writes) do
  if w[1] == 's' then
    if w[4] == '' then redis.call('SET', kv .. w[2], w[3]) else redis.call('SET', kv .. w[2], w[3], 'PX', w[4]) end
    if w[5] == '' then redis.call('ZREM', due, w[2]) else redis.call('ZADD', due, w[5], w[2]) end
  elseif w[1] == 'd' then
    redis.call('DEL', kv .. w[2])
    redis.call('ZREM', due, w[2])
  else
    redis.call('RPUSH', logs .. w[2], w[3])
  end
end
return 1
`;
