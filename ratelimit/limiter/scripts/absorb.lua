-- absorb.lua: the absorb section of decide.lua (approximate zones), included
-- where decide.lua says "-- #include absorb.lua" (see redis.go).
-- absorb (approximate zones) ------------------------------------------------
-- Each charges cost units whatever is left: a token bucket goes below 0,
-- a window counts past events. No counterpart in algorithm*.go: the memory
-- store has no approximate mode.

local function token_bucket_force(key, code, events, w, burst, cost)
  local capacity, rate, tokens, ts = token_state(key, code, events, w, burst)
  local after = token_level(tokens, ts, now, capacity, rate) - cost
  save(key, code, now + ceil((capacity - after) / rate) + SECOND, after, now)
end

local function fixed_window_force(key, code, events, w, burst, cost)
  local start = window_start(now, w)
  local v = load(key, code)
  local count = 0
  if v and v[2] == start then
    count = v[3]
  end
  save(key, code, start + w, start, count + cost)
end

local function sliding_window_force(key, code, events, w, burst, cost)
  local v = load(key, code)
  local ok, sw, sc, sp = false, 0, 0, 0
  if v then
    ok, sw, sc, sp = true, v[2], v[3], v[4]
  end
  local start, cur, prev = sliding_counts(ok, sw, sc, sp, now, w)
  save(key, code, start + 2 * w, start, cur + cost, prev)
end
