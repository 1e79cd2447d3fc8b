-- decide.lua: decides the zones of one or more requests atomically, each
-- request all-or-nothing, in order, as if each had its own call. Mirrors
-- algorithm*.go line by line (same units, same float expressions), so the
-- memory store and Redis agree on every trace. Lua 5.1.
--
-- KEYS: the asks' keys, request after request, each followed by its ban key
--       when its code carries a ban (see bans). A key holds a string
--       "<algorithm code> <field> ...", or a sorted set (sliding_log, concurrency).
-- ARGV[1]: 'd' (decide and, for each request whose asks all pass, charge
--          them), 'r' (refund asks charged by an earlier 'd' on this slot:
--          Redis Cluster, when another slot refused) or 'a' (absorb the
--          local counts of `approximate` zones: token_bucket,
--          sliding_window, fixed_window; each ask is charged its whole
--          cost even past the quota, into a debt that refills repay, and
--          answered as a cost 0 check sees the state after) or 's'
--          (settle cost_after zones and give back leases: see settle.lua).
-- ARGV[2]: 'r', 's': the Redis TIME (µs) of the charging call.
-- ARGV[3...]: per request: n, its number of asks, then per ask: algorithm
--          code (with its ban, if any: see bans), events, window (ms),
--          burst, cost (concurrency: see its file). A calendar fixed_window
--          sends, instead of its burst, "c <prev start> <start> <end> <next
--          end>" (µs): period boundaries around the sender's clock, among
--          which the period containing Redis TIME is picked (see period).
--          A fixed_window's thresholds follow its burst or boundaries as
--          " t <mark>..." (see windows.lua).
-- Reply ('d', 'a'; 's': now_us only): {now_us, then per ask of every
-- request: allowed (0/1; refused by a ban: 2 in force, 3 set by this
-- refusal; a refusal counted by its ban state (see bans) adds 4 when it is
-- the first of the key's window), remaining,
-- retry_us, reset_us, delay_us}; an allowed ask whose charge crossed
-- thresholds adds 8 × their bits to its allowed (see windows.lua). 's'
-- replies {now_us, then per ask: crossed (bits), used}.
--
-- State strings are read once per call (GET) into a table and written once
-- at the end (SET ... PX), however many requests of the call share the
-- key: a batch of coalesced requests costs Redis one read and one write
-- per key. A refusal writes nothing (sliding_log drops expired entries).

-- One library: main decides a call. As a Redis function (FCALL) the definitions
-- are made once, as a script (EVALSHA) on every call; a 7.0 library is loaded
-- without math: main reads it.

local MAX_STEPS = 16
local SECOND = 1000000
local floor, ceil, max, min -- math's, set by main

-- The Redis TIME of the call (µs, ms): set by main.
local now, now_ms

-- num renders a number exactly and short: integers (times, counts) as
-- such, others with 17 significant digits (redis.call would use %.14g).
local function num(x)
  if x == floor(x) and x > -9e15 and x < 9e15 then
    return string.format('%d', x)
  end
  return string.format('%.17g', x)
end

-- Fields after the code, per algorithm code (sorted sets keep none).
local FIELDS = {2, 3, 2, 0, 1, 0}

-- cache: key -> state entry {code, field1, field2, field3, exp = expiry
-- (µs; false: keep the key's TTL), dirty = written by this call}, or
-- false when the key holds no readable state. A new table per call (main).
local cache

-- load returns the state entry of key for algorithm code, or nil when the
-- key is absent or holds another algorithm's state (the zone changed
-- algorithm across a reload: ignored and overwritten on the next charge,
-- as the memory store forgets state of another algorithm).
local function load(key, code)
  local e = cache[key]
  if e == nil then
    e = false
    local v = redis.pcall('GET', key)
    if type(v) == 'string' then -- not absent, not a sorted set
      local c, x, y, z = string.match(v, '^(%d+) (%S+) ?(%S*) ?(%S*)$')
      if c then
        e = {tonumber(c), tonumber(x), tonumber(y), tonumber(z)}
      end
    end
    cache[key] = e
  end
  if e and e[1] == code and e[1 + FIELDS[code]] ~= nil then
    return e
  end
  return nil
end

-- save records the new state of key, written at the end of the call to
-- expire no earlier than exp (µs), or with its TTL kept when exp is false
-- (a refund).
local function save(key, code, exp, x, y, z)
  local e = cache[key]
  if not e then
    e = {}
    cache[key] = e
  end
  e[1], e[2], e[3], e[4], e.exp, e.dirty = code, x, y, z, exp, true
end

-- flush writes every saved state. PX counts from the server's clock at the
-- start of the script, which may be up to a millisecond behind TIME: one
-- millisecond more covers it.
local function flush()
  for key, e in pairs(cache) do
    if e and e.dirty then
      local v = e[1] .. ' ' .. num(e[2])
      if e[3] then
        v = v .. ' ' .. num(e[3])
        if e[4] then
          v = v .. ' ' .. num(e[4])
        end
      end
      if e.exp then
        redis.call('SET', key, v, 'PX', max(ceil(e.exp / 1000) - now_ms, 0) + 1)
      else
        redis.call('SET', key, v, 'KEEPTTL')
      end
    end
  end
end

-- expire_at sets the TTL of a sorted set (sliding_log).
local function expire_at(key, at_us)
  redis.call('PEXPIREAT', key, num(ceil(at_us / 1000)))
end

local function window_start(at, w)
  return at - at % w
end

-- period returns the fixed window containing at: the calendar period
-- among cal's boundaries (the nearest past either end), else the multiple
-- of w since the epoch. Mirrors params.period.
local function period(at, w, cal)
  if type(cal) == 'table' and cal[1] then
    if at < cal[2] then
      return cal[1], cal[2]
    elseif at < cal[3] then
      return cal[2], cal[3]
    elseif at < cal[4] then
      return cal[3], cal[4]
    end
    -- past every boundary sent: keep counting in the last period, ending
    -- a period's length from now (see pickPeriod)
    return cal[3], at + cal[4] - cal[3]
  end
  local start = window_start(at, w)
  return start, start + w
end

-- #include usage.lua

-- window_arg parses a fixed_window's burst argument that is not a number
-- (see ARGV): {calendar boundaries (or none), marks = its thresholds (or
-- nil)}, or nil.
local function window_arg(v)
  local head, usage = usage_arg(v)
  local marks
  local t = string.find(head, ' t ', 1, true)
  if t then
    marks = {}
    for m in string.gmatch(string.sub(head, t + 3), '%d+') do
      marks[#marks + 1] = tonumber(m)
    end
    head = string.sub(head, 1, t - 1)
  end
  local a, b, c, d = string.match(head, '^c (%-?%d+) (%-?%d+) (%-?%d+) (%-?%d+)$')
  if a then
    return {tonumber(a), tonumber(b), tonumber(c), tonumber(d), marks = marks, usage = usage}
  elseif tonumber(head) and (marks or usage) then
    return {marks = marks, usage = usage}
  end
  return nil
end

-- token_bucket ------------------------------------------------------------

local function token_level(tokens, ts, at, capacity, rate)
  return min(tokens + max(at - ts, 0) * rate, capacity)
end

-- token_state returns a bucket's capacity, refill rate (per µs) and its
-- stored tokens at ts (a missing bucket is full now).
local function token_state(key, code, events, w, burst)
  local capacity = burst > 0 and burst or events
  local v = load(key, code) -- tokens, ts
  if v then
    return capacity, events / w, v[2], v[3]
  end
  return capacity, events / w, capacity, now
end

local function token_bucket(key, code, events, w, burst, cost)
  local capacity, rate, tokens, ts = token_state(key, code, events, w, burst)
  local level = token_level(tokens, ts, now, capacity, rate)
  local need = max(cost, 1)
  if level >= need then
    local after = level - cost
    local reset = ceil((capacity - after) / rate)
    local write = function()
      save(key, code, now + reset + SECOND, after, now)
    end
    return {1, floor(after), 0, reset, 0}, write
  end
  local retry = w
  if need <= capacity then
    local wait = ceil((need - tokens) / rate)
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
    retry = max(ts + wait - now, 1)
  end
  return {0, floor(level), retry, ceil((capacity - level) / rate), 0}
end

local function token_bucket_refund(key, code, events, w, burst, cost)
  local capacity = burst > 0 and burst or events
  local v = load(key, code)
  if v then
    save(key, code, false, min(v[2] + cost, capacity), v[3])
  end
end

-- #include windows.lua

-- sliding_log ---------------------------------------------------------------

local function sliding_log(key, code, events, w, burst, cost)
  local trimmed = redis.pcall('ZREMRANGEBYSCORE', key, '-inf', num(now - w))
  if type(trimmed) == 'table' and trimmed.err then
    redis.call('DEL', key) -- another algorithm's state string: absent
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
  local need = max(cost, 1)
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
    retry = max(oldest + w - now, 1)
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
  local slack = limit - (max(cost, 1) - 1) * interval
  local v = load(key, code) -- theoretical arrival time
  local stored = nil
  local tat = now
  if v then
    stored = v[2]
    if stored > tat then
      tat = stored
    end
  end
  local wait = tat - now
  if wait <= slack then
    local after = tat + cost * interval
    local delay = 0
    if cost > 0 then
      delay = ceil(wait)
    end
    local write = function()
      save(key, code, ceil(after) + SECOND, after)
    end
    return {1, floor((limit - (after - now)) / interval) + 1, 0, ceil(after - now), delay}, write
  end
  local retry = w
  if slack >= 0 then
    local at = ceil(stored - slack)
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
    retry = max(at - now, 1)
  end
  return {0, floor((limit - wait) / interval) + 1, retry, ceil(wait), 0}
end

local function leaky_bucket_refund(key, code, events, w, burst, cost)
  local v = load(key, code)
  if v then
    save(key, code, false, v[2] - cost * (w / events))
  end
end
-- #include concurrency.lua
-- #include absorb.lua

-- dispatch ------------------------------------------------------------------

local decide = {token_bucket, sliding_window, fixed_window, sliding_log, leaky_bucket, concurrency}
local refund = {token_bucket_refund, window_refund, window_refund, sliding_log_refund, leaky_bucket_refund, concurrency_refund}
local force = {token_bucket_force, sliding_window_force, fixed_window_force}

-- #include bans.lua
-- #include settle.lua

-- main decides one call: KEYS and ARGV as described at the top.
local function main(KEYS, ARGV)
  floor, ceil, max, min = math.floor, math.ceil, math.max, math.min
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  now_ms = floor(now / 1000)
  cache, ban_cache = {}, {}
  local mode = ARGV[1]
  local at = tonumber(ARGV[2])
  local reply = {now}
  local function answer(r)
    for j = 1, 5 do
      reply[#reply + 1] = r[j]
    end
  end
  local writes = {}
  local a, k = 3, 1 -- next ask's ARGV and KEYS
  while a <= #ARGV do
    local n = tonumber(ARGV[a])
    local nw, all = 0, true
    for i = 0, n - 1 do
      local b = a + 1 + i * 5
      local key, code, ban = KEYS[k], ask_code(ARGV[b])
      k = take_ban_key(KEYS, ban, k + 1)
      local events = tonumber(ARGV[b + 1])
      local w = tonumber(ARGV[b + 2]) * 1000
      local burst = ARGV[b + 3] -- concurrency: the lease id
      if code ~= CONCURRENCY then
        burst = tonumber(burst) or window_arg(burst)
      end
      k = take_usage_key(KEYS, burst, k)
      local usage = type(burst) == 'table' and burst.usage
      local cost = tonumber(ARGV[b + 4])
      if mode == 'r' then
        if cost > 0 then
          refund[code](key, code, events, w, burst, cost, at)
          if usage then
            usage_settled(burst, at, w, -cost)
          end
        end
      elseif mode == 's' then
        if usage then
          usage_settled(burst, at, w, cost)
        end
        local c, used = settle(key, code, events, w, burst, cost, at)
        reply[#reply + 1] = c or 0
        reply[#reply + 1] = used or 0
      elseif mode == 'a' then
        if cost > 0 then
          force[code](key, code, events, w, burst, cost)
        end
        local r = decide[code](key, code, events, w, burst, 0)
        if ban and r[1] == 0 then
          r = offend(w, ban, r)
        end
        answer(r)
      else
        local r, write
        if ban then
          r, write = decide_banned(key, code, events, w, burst, cost, ban)
        else
          r, write = decide[code](key, code, events, w, burst, cost)
        end
        if usage and (cost > 0 or r[1] ~= 1) then
          write = usage_decided(burst, r, write, w, cost)
        end
        answer(r)
        if r[1] ~= 1 then
          all = false
        elseif cost > 0 then
          nw = nw + 1
          writes[nw] = {write, #reply - 4} -- and where its allowed is
        end
      end
    end
    if all then
      for j = 1, nw do
        local c = writes[j][1]() -- the thresholds it crossed, if any
        if c and c > 0 then
          reply[writes[j][2]] = reply[writes[j][2]] + 8 * c
        end
      end
    end
    a = a + 1 + n * 5
  end
  flush()
  ban_flush()
  return reply
end

-- The entry point per form (redis.go, redis_function.go):
-- #include entry
