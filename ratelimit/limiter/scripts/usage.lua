-- usage.lua: the usage section of decide.lua, included where decide.lua
-- says "-- #include usage.lua" (see redis.go). Mirrors usage.go.
-- usage ---------------------------------------------------------------------
-- A fixed_window ask whose burst argument ends with " u <keep ms> <hex of
-- the key>" keeps its key's usage per period in its usage key, which the
-- caller passes in KEYS right after the ask's key (and its ban key): a hash
-- of "k", the key in clear, and per period "<start µs>:u", the units charged
-- (net of refunds and settlements), and "<start µs>:r", the requests the
-- zone refused. A period's fields are dropped once it started more than
-- keep before the period of a new charge; the hash lives keep past the
-- current period's end.

-- usage_arg splits " u <keep ms> <hex>" off a burst argument: the rest and
-- {keep = µs, key = the key}, or v and nil.
local function usage_arg(v)
  local s = string.find(v, ' u ', 1, true)
  if not s then
    return v, nil
  end
  local keep, hex = string.match(string.sub(v, s + 3), '^(%d+) (%x*)$')
  if not keep then
    return v, nil
  end
  local key = string.gsub(hex, '%x%x', function(c)
    return string.char(tonumber(c, 16))
  end)
  return string.sub(v, 1, s - 1), {keep = tonumber(keep) * 1000, key = key}
end

-- take_usage_key sets the usage key of an ask whose burst carries usage to
-- KEYS[k] and returns the index of the next key.
local function take_usage_key(KEYS, burst, k)
  if type(burst) == 'table' and burst.usage then
    burst.usage.ukey = KEYS[k]
    return k + 1
  end
  return k
end

local function usage_prune(ukey, start, keep)
  for _, f in ipairs(redis.call('HKEYS', ukey)) do
    local m = string.match(f, '^(%-?%d+):[ur]$')
    if m and tonumber(m) + keep < start then
      redis.call('HDEL', ukey, f)
    end
  end
end

-- usage_add adds units and refusals to the period containing at.
local function usage_add(burst, at, w, units, refused)
  local u = burst.usage
  local start = period(at, w, burst)
  local _, cur_end = period(now, w, burst)
  if units ~= 0 then
    local v = redis.call('HINCRBY', u.ukey, num(start) .. ':u', num(units))
    if v == units then -- the period's first charge
      usage_prune(u.ukey, start, u.keep)
    end
  end
  if refused > 0 then
    redis.call('HINCRBY', u.ukey, num(start) .. ':r', refused)
  end
  redis.call('HSET', u.ukey, 'k', u.key)
  redis.call('PEXPIRE', u.ukey, max(ceil((cur_end + u.keep - now) / 1000), 1))
end

-- usage_decided records a decision ('d') of an ask with usage: a refusal at
-- once, a charge when it is written (the write returned wraps write).
local function usage_decided(burst, r, write, w, cost)
  if r[1] ~= 1 then
    usage_add(burst, now, w, 0, 1)
    return write
  end
  return function()
    local c = write()
    usage_add(burst, now, w, cost, 0)
    return c
  end
end

-- usage_settled records a refund ('r') or a settlement ('s') of delta
-- units (< 0: given back to the period charged at at).
local function usage_settled(burst, at, w, delta)
  if delta > 0 then
    usage_add(burst, now, w, delta, 0)
  elseif delta < 0 then
    usage_add(burst, at, w, delta, 0)
  end
end
