-- fixed_window and sliding_window: included in decide.lua where it names
-- this file (see redis.go).

-- fixed_window --------------------------------------------------------------

-- crossed returns the thresholds (bit i - 1 for marks[i]) a count of used
-- reaches that told (bits) does not hold yet. Mirrors thresholds.go.
local function crossed(marks, told, used)
  local c, bit = 0, 1
  for i = 1, #(marks or {}) do
    if used >= marks[i] and floor(told / bit) % 2 == 0 then
      c = c + bit
    end
    bit = bit * 2
  end
  return c
end

-- window_state returns a fixed_window's count and its thresholds told in
-- the period starting at start.
local function window_state(key, code, start)
  local v = load(key, code) -- window start, count, thresholds told
  if v and v[2] == start then
    return v[3], tonumber(v[4]) or 0
  end
  return 0, 0
end

-- window_save saves a fixed_window's count and thresholds told, and
-- returns the thresholds first crossed.
local function window_save(key, code, finish, start, count, told, marks)
  local c = crossed(marks, told, count)
  told = told + c
  if told == 0 then
    told = nil
  end
  save(key, code, finish, start, count, told)
  return c
end

local function fixed_window(key, code, events, w, burst, cost)
  local start, finish = period(now, w, burst)
  local count, told = window_state(key, code, start)
  local need = max(cost, 1)
  if count + need <= events then
    local write = function()
      return window_save(key, code, finish, start, count + cost, told, type(burst) == 'table' and burst.marks)
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

-- sliding_reset is when a window holding c now and prev before is empty.
local function sliding_reset(start, c, prev, w)
  if c > 0 then
    return start + 2 * w - now
  elseif prev > 0 then
    return start + w - now
  end
  return 0
end

local function sliding_window(key, code, events, w, burst, cost)
  local v = load(key, code) -- window start, current, previous
  local ok = false
  local sw, sc, sp = 0, 0, 0
  if v then
    ok = true
    sw, sc, sp = v[2], v[3], v[4]
  end
  local start, cur, prev = sliding_counts(ok, sw, sc, sp, now, w)
  local estimate = sliding_estimate(cur, prev, now - start, w)
  local need = max(cost, 1)
  if estimate + need <= events then
    local reset = sliding_reset(start, cur + cost, prev, w)
    local write = function()
      save(key, code, start + 2 * w, start, cur + cost, prev)
    end
    return {1, floor(events - estimate - cost), 0, reset, 0}, write
  end
  local reset = sliding_reset(start, cur, prev, w)
  if need > events then
    return {0, floor(events - estimate), w, reset, 0}
  end
  local avail = events - need
  local at = -1
  if prev > 0 and cur <= avail then
    local e = ceil(w * (1 - (avail - cur) / prev))
    if e < w then
      at = start + e
    end
  end
  if at < 0 then
    if cur == 0 then
      at = start + w
    else
      at = start + w + ceil(w * (1 - avail / cur))
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
  return {0, floor(events - estimate), max(at - now, 1), reset, 0}
end

local function window_refund(key, code, events, w, burst, cost, at)
  local v = load(key, code) -- start, count (fixed) or current (sliding), previous (sliding)
  if not v then
    return
  end
  local start = period(at, w, burst)
  local sw, c, p = v[2], v[3], v[4]
  if sw == start then
    c = max(c - cost, 0)
  elseif sw == start + w and p then
    p = max(p - cost, 0)
  else
    return
  end
  save(key, code, false, sw, c, p)
end
