-- settle.lua: the settle section of decide.lua (mode 's': cost_after),
-- included where decide.lua says "-- #include settle.lua" (see redis.go).
-- settle --------------------------------------------------------------------
-- An ask's cost is the settlement's delta: > 0 charged whatever is left
-- (into debt, see absorb.lua), < 0 given back to the window charged at
-- `at` (the admission's Redis TIME). A concurrency ask gives its lease
-- back, so that a request's settlement and its leases leave in one call.
-- Mirrors MemoryStore.Settle (settle.go). It returns what a fixed_window
-- charge crossed (see windows.lua) and its count.

local function settle(key, code, events, w, burst, delta, at)
  if code == CONCURRENCY then
    concurrency_refund(key, code, events, w, burst, 0)
  elseif delta > 0 then
    return force[code](key, code, events, w, burst, delta)
  elseif delta < 0 then
    refund[code](key, code, events, w, burst, -delta, at)
  end
end
