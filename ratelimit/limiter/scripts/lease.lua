-- lease.lua: refreshes concurrency leases (see the concurrency section of
-- decide.lua): each lease still held is set to expire its TTL from now
-- (Redis TIME) and its key's TTL follows its latest lease. A lease that
-- expired or was given back is not taken again. Lua 5.1.
--
-- KEYS: the leases' keys (sorted sets; one slot on Redis Cluster).
-- ARGV: per key, the lease id and the TTL (ms).
-- Reply: per key, 1 when the lease was still held, else 0.

if redis.replicate_commands then
  redis.replicate_commands()
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local function num(x)
  return string.format('%d', x)
end

local reply = {}
for i, key in ipairs(KEYS) do
  local id = ARGV[2 * i - 1]
  local ttl = tonumber(ARGV[2 * i]) * 1000
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
