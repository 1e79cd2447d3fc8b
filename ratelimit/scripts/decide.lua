-- decide.lua: decides every zone of one request atomically, all-or-nothing.
-- Mirrors algorithm*.go line by line (same units, same float expressions),
-- so the memory store and Redis agree on every trace. Lua 5.1.
--
-- KEYS[i]: the state of ask i (a hash naming its algorithm in field a, or a
--          sorted set for sliding_log).
-- ARGV[1]: 'd' (decide and, if every ask passes, charge every ask) or
--          'r' (refund asks charged by an earlier 'd' on this slot: Redis
--          Cluster, when another slot refused).
-- ARGV[2]: 'r' only: the Redis TIME (µs) of the charging call.
-- ARGV[3+5(i-1) ...]: ask i: algorithm code, events, window (ms), burst, cost.
--
-- Reply ('d'): {now_us, then per ask: allowed (0/1), remaining, retry_us,
-- reset_us, delay_us}. Every written key gets a TTL (PEXPIREAT) in the same
-- call; a refusal writes nothing (sliding_log only drops expired entries).

-- Redis < 5 replicates scripts verbatim, which TIME forbids; later
-- versions replicate effects already (and keep this as a no-op).
if redis.replicate_commands then
  redis.replicate_commands()
end

local MAX_STEPS = 16
local SECOND = 1000000

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

-- num renders a number exactly (redis.call would use %.14g).
local function num(x)
  return string.format('%.17g', x)
end

-- hmget reads fields of the state hash of algorithm code. The hash names
-- its algorithm in field a; a key holding another algorithm's state (the
-- zone changed algorithm across a reload) is dropped and reads as absent,
-- as the memory store forgets state of another algorithm.
local function hmget(key, code, ...)
  local v = redis.pcall('HMGET', key, 'a', ...)
  if type(v) == 'table' and v.err then
    redis.call('DEL', key) -- a sorted set (sliding_log)
    return {}
  end
  if v[1] ~= tostring(code) then
    if v[1] then
      redis.call('DEL', key)
    end
    return {}
  end
  return {unpack(v, 2)}
end

local function expire_at(key, at_us)
  redis.call('PEXPIREAT', key, num(math.ceil(at_us / 1000)))
end

local function window_start(at, w)
  return at - at % w
end

-- token_bucket ------------------------------------------------------------

local function token_level(tokens, ts, at, capacity, rate)
  local elapsed = math.max(at - ts, 0)
  local level = tokens + elapsed * rate
  if level > capacity then
    level = capacity
  end
  return level
end

local function token_bucket(key, code, events, w, burst, cost)
  local capacity = events
  if burst > 0 then
    capacity = burst
  end
  local rate = events / w
  local v = hmget(key, code, 'tk', 'ts')
  local tokens, ts = capacity, now
  if v[1] and v[2] then
    tokens, ts = tonumber(v[1]), tonumber(v[2])
  end
  local level = token_level(tokens, ts, now, capacity, rate)
  local need = math.max(cost, 1)
  if level >= need then
    local after = level - cost
    local reset = math.ceil((capacity - after) / rate)
    local write = function()
      redis.call('HSET', key, 'a', code, 'tk', num(after), 'ts', num(now))
      expire_at(key, now + reset + SECOND)
    end
    return {1, math.floor(after), 0, reset, 0}, write
  end
  local retry = w
  if need <= capacity then
    local wait = math.ceil((need - tokens) / rate)
    local i = 0
    while i < MAX_STEPS and token_level(tokens, ts, ts + wait, capacity, rate) < need do
      wait = wait + 1
      i = i + 1
    end
    i = 0
    while i < MAX_STEPS and token_level(tokens, ts, ts + wait - 1, capacity, rate) >= need do
      wait = wait - 1
      i = i + 1
    end
    retry = math.max(ts + wait - now, 1)
  end
  return {0, math.floor(level), retry, math.ceil((capacity - level) / rate), 0}
end

local function token_bucket_refund(key, code, events, w, burst, cost)
  local capacity = events
  if burst > 0 then
    capacity = burst
  end
  local v = hmget(key, code, 'tk')[1]
  if v then
    redis.call('HSET', key, 'tk', num(math.min(tonumber(v) + cost, capacity)))
  end
end

-- fixed_window --------------------------------------------------------------

local function fixed_window(key, code, events, w, burst, cost)
  local start = window_start(now, w)
  local finish = start + w
  local v = hmget(key, code, 'w', 'c')
  local count = 0
  if v[1] and v[2] and tonumber(v[1]) == start then
    count = tonumber(v[2])
  end
  local need = math.max(cost, 1)
  if count + need <= events then
    local write = function()
      redis.call('HSET', key, 'a', code, 'w', num(start), 'c', num(count + cost))
      expire_at(key, finish)
    end
    return {1, events - count - cost, 0, finish - now, 0}, write
  end
  local retry = finish - now
  if need > events then
    retry = w
  end
  return {0, events - count, retry, finish - now, 0}
end

-- sliding_window ------------------------------------------------------------

local function sliding_counts(ok, sw, sc, sp, at, w)
  local start = window_start(at, w)
  local cur, prev = 0, 0
  if ok then
    if sw == start then
      cur, prev = sc, sp
    elseif sw == start - w then
      prev = sc
    end
  end
  return start, cur, prev
end

local function sliding_estimate(cur, prev, elapsed, w)
  return prev * (1 - elapsed / w) + cur
end

local function sliding_at(ok, sw, sc, sp, at, w)
  local start, cur, prev = sliding_counts(ok, sw, sc, sp, at, w)
  return sliding_estimate(cur, prev, at - start, w)
end

local function sliding_window(key, code, events, w, burst, cost)
  local v = hmget(key, code, 'w', 'c', 'p')
  local ok = false
  local sw, sc, sp = 0, 0, 0
  if v[1] and v[2] and v[3] then
    ok = true
    sw, sc, sp = tonumber(v[1]), tonumber(v[2]), tonumber(v[3])
  end
  local start, cur, prev = sliding_counts(ok, sw, sc, sp, now, w)
  local estimate = sliding_estimate(cur, prev, now - start, w)
  local need = math.max(cost, 1)
  if estimate + need <= events then
    local reset = 0
    if cur + cost > 0 then
      reset = start + 2 * w - now
    elseif prev > 0 then
      reset = start + w - now
    end
    local write = function()
      redis.call('HSET', key, 'a', code, 'w', num(start), 'c', num(cur + cost), 'p', num(prev))
      expire_at(key, start + 2 * w)
    end
    return {1, math.floor(events - estimate - cost), 0, reset, 0}, write
  end
  local reset = 0
  if cur > 0 then
    reset = start + 2 * w - now
  elseif prev > 0 then
    reset = start + w - now
  end
  if need > events then
    return {0, math.floor(events - estimate), w, reset, 0}
  end
  local avail = events - need
  local at = -1
  if prev > 0 and cur <= avail then
    local e = math.ceil(w * (1 - (avail - cur) / prev))
    if e < w then
      at = start + e
    end
  end
  if at < 0 then
    if cur == 0 then
      at = start + w
    else
      at = start + w + math.ceil(w * (1 - avail / cur))
    end
  end
  local i = 0
  while i < MAX_STEPS and sliding_at(ok, sw, sc, sp, at, w) + need > events do
    at = at + 1
    i = i + 1
  end
  i = 0
  while i < MAX_STEPS and sliding_at(ok, sw, sc, sp, at - 1, w) + need <= events do
    at = at - 1
    i = i + 1
  end
  return {0, math.floor(events - estimate), math.max(at - now, 1), reset, 0}
end

local function window_refund(key, code, events, w, burst, cost, at)
  local v = hmget(key, code, 'w', 'c', 'p')
  if not (v[1] and v[2]) then
    return
  end
  local start = window_start(at, w)
  local sw = tonumber(v[1])
  if sw == start then
    redis.call('HSET', key, 'c', num(math.max(tonumber(v[2]) - cost, 0)))
  elseif sw == start + w and v[3] then
    redis.call('HSET', key, 'p', num(math.max(tonumber(v[3]) - cost, 0)))
  end
end

-- sliding_log ---------------------------------------------------------------

local function sliding_log(key, code, events, w, burst, cost)
  local trimmed = redis.pcall('ZREMRANGEBYSCORE', key, '-inf', num(now - w))
  if type(trimmed) == 'table' and trimmed.err then
    redis.call('DEL', key) -- another algorithm's hash: absent
  end
  local count = redis.call('ZCARD', key)
  if count > events then
    redis.call('ZREMRANGEBYRANK', key, 0, num(count - events - 1))
    count = events
  end
  local newest = -1
  if count > 0 then
    newest = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
  end
  local need = math.max(cost, 1)
  if count + need <= events then
    local reset = 0
    if cost > 0 then
      reset = w
    elseif count > 0 then
      reset = newest + w - now
    end
    local write = function()
      local idx = count
      for _ = 1, cost do
        local member = num(now) .. ':' .. idx
        while redis.call('ZSCORE', key, member) do
          idx = idx + 1
          member = num(now) .. ':' .. idx
        end
        redis.call('ZADD', key, num(now), member)
        idx = idx + 1
      end
      expire_at(key, now + w)
    end
    return {1, events - count - cost, 0, reset, 0}, write
  end
  local reset = 0
  if count > 0 then
    reset = newest + w - now
  end
  local retry = w
  if need <= events then
    local k = count + need - events
    local oldest = tonumber(redis.call('ZRANGE', key, k - 1, k - 1, 'WITHSCORES')[2])
    retry = math.max(oldest + w - now, 1)
  end
  return {0, events - count, retry, reset, 0}
end

local function sliding_log_refund(key, code, events, w, burst, cost, at)
  local members = redis.call('ZRANGEBYSCORE', key, num(at), num(at), 'LIMIT', 0, num(cost))
  for _, m in ipairs(members) do
    redis.call('ZREM', key, m)
  end
end

-- leaky_bucket --------------------------------------------------------------

local function leaky_bucket(key, code, events, w, burst, cost)
  local interval = w / events
  local limit = burst * interval
  local slack = limit - (math.max(cost, 1) - 1) * interval
  local v = hmget(key, code, 'tat')[1]
  local stored = nil
  local tat = now
  if v then
    stored = tonumber(v)
    if stored > tat then
      tat = stored
    end
  end
  local wait = tat - now
  if wait <= slack then
    local after = tat + cost * interval
    local delay = 0
    if cost > 0 then
      delay = math.ceil(wait)
    end
    local write = function()
      redis.call('HSET', key, 'a', code, 'tat', num(after))
      expire_at(key, math.ceil(after) + SECOND)
    end
    return {1, math.floor((limit - (after - now)) / interval) + 1, 0, math.ceil(after - now), delay}, write
  end
  local retry = w
  if slack >= 0 then
    local at = math.ceil(stored - slack)
    local i = 0
    while i < MAX_STEPS and stored - at > slack do
      at = at + 1
      i = i + 1
    end
    i = 0
    while i < MAX_STEPS and stored - (at - 1) <= slack do
      at = at - 1
      i = i + 1
    end
    retry = math.max(at - now, 1)
  end
  return {0, math.floor((limit - wait) / interval) + 1, retry, math.ceil(wait), 0}
end

local function leaky_bucket_refund(key, code, events, w, burst, cost)
  local v = hmget(key, code, 'tat')[1]
  if v then
    redis.call('HSET', key, 'tat', num(tonumber(v) - cost * (w / events)))
  end
end

-- dispatch ------------------------------------------------------------------

local decide = {token_bucket, sliding_window, fixed_window, sliding_log, leaky_bucket}
local refund = {token_bucket_refund, window_refund, window_refund, sliding_log_refund, leaky_bucket_refund}

local mode = ARGV[1]
local reply = {now}
local writes = {}
local all = true
for i = 1, #KEYS do
  local b = 3 + (i - 1) * 5
  local code = tonumber(ARGV[b])
  local events = tonumber(ARGV[b + 1])
  local w = tonumber(ARGV[b + 2]) * 1000
  local burst = tonumber(ARGV[b + 3])
  local cost = tonumber(ARGV[b + 4])
  if mode == 'r' then
    if cost > 0 then
      refund[code](KEYS[i], code, events, w, burst, cost, tonumber(ARGV[2]))
    end
  else
    local r, write = decide[code](KEYS[i], code, events, w, burst, cost)
    for j = 1, 5 do
      reply[#reply + 1] = r[j]
    end
    if r[1] == 0 then
      all = false
    elseif cost > 0 then
      writes[#writes + 1] = write
    end
  end
end
if all then
  for _, write in ipairs(writes) do
    write()
  end
end
return reply
