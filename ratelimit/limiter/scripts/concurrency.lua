-- concurrency.lua: the concurrency section of decide.lua, included where
-- decide.lua says "-- #include concurrency.lua" (see redis.go). An ask's
-- window is the lease TTL and its burst the lease id.
--
-- concurrency ---------------------------------------------------------------
-- A sorted set of leases: member = lease id, score = expiry (µs). A lease
-- is taken here and given back by ZREM (or refreshed by lease.lua) when
-- its request ends; an expired one is dropped before counting. Mirrors
-- algorithm_concurrency.go.

local CONCURRENCY = 6
local LEASE_RETRY = SECOND

-- leases_live drops the expired leases of key and counts the others.
local function leases_live(key)
  local trimmed = redis.pcall('ZREMRANGEBYSCORE', key, '-inf', num(now))
  if type(trimmed) == 'table' and trimmed.err then
    redis.call('DEL', key) -- another algorithm's state string: absent
  end
  return redis.call('ZCARD', key)
end

local function concurrency(key, code, events, w, lease, cost)
  local count = leases_live(key)
  if count + max(cost, 1) <= events then
    local write = function()
      redis.call('ZADD', key, num(now + w), lease)
      local last = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
      expire_at(key, last)
    end
    return {1, events - count - cost, 0, 0, 0}, write
  end
  return {0, max(events - count, 0), LEASE_RETRY, 0, 0}
end

local function concurrency_refund(key, code, events, w, lease, cost)
  redis.call('ZREM', key, lease)
end
