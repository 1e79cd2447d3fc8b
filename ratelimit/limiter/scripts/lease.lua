-- lease.lua: refreshes or gives back concurrency leases (see
-- concurrency.lua). A refresh sets each lease still held to expire its TTL
-- from now (Redis TIME), its key's TTL following its latest lease; a lease
-- that expired or was given back is not taken again. Lua 5.1.
--
-- KEYS: the leases' keys (sorted sets; one slot on Redis Cluster).
-- ARGV[1]: 'f' (refresh: then per key the lease id and the TTL in ms) or
--          'x' (give back: then per key the lease id).
-- Reply: 'f': per key, 1 when the lease was still held, else 0; 'x': the
-- number of leases given back.

if redis.replicate_commands then
  redis.replicate_commands()
end

if ARGV[1] == 'x' then
  local n = 0
  for i, key in ipairs(KEYS) do
    local r = redis.pcall('ZREM', key, ARGV[i + 1])
    if type(r) == 'number' then -- else not a sorted set: nothing to give back
      n = n + r
    end
  end
  return n
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local function num(x)
  return string.format('%d', x)
end

local reply = {}
for i, key in ipairs(KEYS) do
  local id = ARGV[2 * i]
  local ttl = tonumber(ARGV[2 * i + 1]) * 1000
  local score = redis.pcall('ZSCORE', key, id)
  local held = 0
  if type(score) == 'string' and tonumber(score) > now then
    redis.call('ZADD', key, num(now + ttl), id)
    local last = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
    redis.call('PEXPIREAT', key, num(math.ceil(last / 1000)))
    held = 1
  end
  reply[i] = held
end
return reply
