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
