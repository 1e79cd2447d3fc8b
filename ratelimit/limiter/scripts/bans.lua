-- bans.lua: the bans section of decide.lua, included where decide.lua says
-- "-- #include bans.lua" (see redis.go).
-- bans ------------------------------------------------------------------------
-- Mirrors ban.go. An ask's code may carry its ban: "<code> <ban ms> <after>
-- <max ms>" (a ban of 0 ms: refusals are only counted, to tell the first
-- of a window: Ask.Notify). A key's ban state lives in its companion, the
-- ban key the caller computes (BanKey) and passes in KEYS right after the
-- key, as "<count> <since> <until> <level>" (µs), read once per call and
-- written at the end like the quota states.

-- ask_code returns an ask's algorithm code and its ban ({us, after, max_us};
-- main adds the ban key as [4]) or nil.
local function ask_code(v)
  local plain = tonumber(v) -- no ban: no pattern to match
  if plain then
    return plain, nil
  end
  local c, b, n, m = string.match(v, '^(%d+) (%d+) (%d+) (%d+)$')
  if not c then
    return nil, nil
  end
  return tonumber(c), {tonumber(b) * 1000, tonumber(n), tonumber(m) * 1000}
end

-- take_ban_key sets ban[4] to KEYS[k], the ban key the caller passes right
-- after the ask's key when the ask carries a ban, and returns the index of
-- the next ask's key. KEYS is main's (a function has no global KEYS).
local function take_ban_key(KEYS, ban, k)
  if ban then
    ban[4] = KEYS[k]
    return k + 1
  end
  return k
end

-- ban_cache: companion key -> {count, since, until, level, exp, dirty}
local ban_cache -- a new table per call (main)

local function ban_load(bkey)
  local st = ban_cache[bkey]
  if st == nil then
    st = {0, 0, 0, 0}
    local v = redis.pcall('GET', bkey)
    if type(v) == 'string' then
      local c, s, u, l = string.match(v, '^(%d+) (%d+) (%d+) (%d+)$')
      if c then
        st = {tonumber(c), tonumber(s), tonumber(u), tonumber(l)}
      end
    end
    ban_cache[bkey] = st
  end
  return st
end

-- banned returns the refusal of an ask whose ban key says it is banned at
-- now, or nil.
local function banned(bkey)
  local left = ban_load(bkey)[3] - now
  if left > 0 then
    return {2, 0, left, left, 0}
  end
  return nil
end

-- offend counts the refusal r of an ask under window w in its ban key
-- (ban[4]); it returns r, or
-- the refusal that set a ban, its verdict plus 4 when the refusal is the
-- first of the key's window (or since its last ban).
local function offend(w, ban, r)
  local st = ban_load(ban[4])
  if now >= st[2] + w then
    st[1], st[2] = 0, now
  end
  if now >= st[3] + ban[3] then -- as if the state had expired
    st[4] = 0
  end
  st[1] = st[1] + 1
  local first = 0
  if st[1] == 1 then
    first = 4
  end
  local dur = 0
  if ban[1] > 0 and st[1] >= ban[2] then
    st[4] = min(st[4] + 1, 63)
    dur = min(ban[1] * 2 ^ (st[4] - 1), ban[3])
    st[1], st[2], st[3] = 0, now, now + dur
  end
  local exp = st[2] + w
  if st[4] > 0 then
    exp = max(exp, st[3] + ban[3])
  end
  st.exp, st.dirty = exp, true
  if dur > 0 then
    return {3 + first, r[2], dur, max(r[4], dur), 0}
  end
  r[1] = r[1] + first
  return r
end

local function ban_flush()
  for bkey, st in pairs(ban_cache) do
    if st.dirty then
      redis.call('SET', bkey, num(st[1]) .. ' ' .. num(st[2]) .. ' ' .. num(st[3]) .. ' ' .. num(st[4]),
        'PX', max(ceil(st.exp / 1000) - now_ms, 0) + 1)
    end
  end
end

-- decide_banned decides one ask ('d' mode) of a zone that counts its
-- refusals: refused outright while banned, else decided, a refusal counted
-- as an offence.
local function decide_banned(key, code, events, w, burst, cost, ban)
  local r = ban[1] > 0 and banned(ban[4])
  if r then
    return r
  end
  local write
  r, write = decide[code](key, code, events, w, burst, cost)
  if r[1] == 0 then
    r = offend(w, ban, r)
  end
  return r, write
end
