-- Samples the click stream for the lag metrics (see clicks/lag.go).
--
-- KEYS[1]  the stream
--
-- Returns {entries in the stream, age in ms of the oldest one by Redis's
-- clock (0 when there is none)}. Consumers delete the entries they have
-- counted, so every entry left is a batch not yet counted; its ID starts
-- with the Redis time in ms at which XADD appended it.

local len = redis.call('XLEN', KEYS[1])
if len == 0 then
  return {0, 0}
end
local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
if #first == 0 then
  return {len, 0}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local at = tonumber(string.match(first[1][1], '^(%d+)')) or now
if at > now then
  return {len, 0}
end
return {len, now - at}
