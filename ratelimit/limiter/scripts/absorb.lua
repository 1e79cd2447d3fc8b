-- absorb.lua: the absorb section of decide.lua (approximate zones), included
-- where decide.lua says "-- #include absorb.lua" (see redis.go).
-- absorb (approximate zones) ------------------------------------------------
-- Each charges cost units whatever is left: a token bucket goes below 0,
-- a window counts past events. Also the charges of settle.lua (cost_after).
-- A debt is cut where it would take more than MAX_DEBT to repay or pass
-- MAX_EVENTS units (a window: events + MAX_EVENTS). Mirrored by
-- memoryEntry.force (settle.go): the memory store has no approximate mode,
-- but settles.

local MAX_DEBT = 315360000000000 -- µs: 10 years (MaxDebtSpan)
local MAX_EVENTS = 1125899906842624 -- 2^50

local function debt_floor(capacity, rate)
  return max(capacity - rate * MAX_DEBT, -MAX_EVENTS)
end

local function token_bucket_force(key, code, events, w, burst, cost)
  local capacity, rate, tokens, ts = token_state(key, code, events, w, burst)
  local after = max(token_level(tokens, ts, now, capacity, rate) - cost, debt_floor(capacity, rate))
  save(key, code, now + ceil((capacity - after) / rate) + SECOND, after, now)
end

-- fixed_window_force returns the thresholds it crossed and the count.
local function fixed_window_force(key, code, events, w, burst, cost)
  local start, finish = period(now, w, burst)
  local count, told = window_state(key, code, start)
  count = min(count + cost, events + MAX_EVENTS)
  return window_save(key, code, finish, start, count, told, type(burst) == 'table' and burst.marks), count
end

local function sliding_window_force(key, code, events, w, burst, cost)
  local v = load(key, code)
  local ok, sw, sc, sp = false, 0, 0, 0
  if v then
    ok, sw, sc, sp = true, v[2], v[3], v[4]
  end
  local start, cur, prev = sliding_counts(ok, sw, sc, sp, now, w)
  save(key, code, start + 2 * w, start, min(cur + cost, events + MAX_EVENTS), prev)
end
