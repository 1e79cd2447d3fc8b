-- Appends click batches to the click stream and keeps the stream within its
-- caps, in bytes and in entries (see clicks_stream.go).
--
-- KEYS[1]  the stream
-- ARGV[1]  byte cap of the stream's entries, each counted as
--          #batch ID + #clicks + 64
-- ARGV[2]  entry cap
-- ARGV[3]  TTL of the stream, seconds
-- ARGV[4]  the largest size an entry can have
-- then per batch: ARGV[5+3i] its ID, ARGV[6+3i] its encoded clicks,
--          ARGV[7+3i] how many clicks
--
-- Each entry carries "end": the running total of entry bytes appended up to
-- and including it. The entries left in the stream lie within the bytes
-- from the oldest one's start (its end minus its size) to the newest one's
-- end, so trimming the oldest until that span fits the cap bounds the
-- stream's bytes (the span over-counts entries consumed and deleted in the
-- middle, it never under-counts). An entry without "end" (written before
-- the caps existed) counts as starting at 0.
--
-- Returns {entries trimmed, clicks in them}: clicks no consumer will count.

local stream = KEYS[1]
local max_bytes = tonumber(ARGV[1])
local max_len = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
local max_entry = tonumber(ARGV[4])
local overhead = 64

local function field(fields, name)
  for i = 1, #fields, 2 do
    if fields[i] == name then
      return fields[i + 1]
    end
  end
  return nil
end

local function entry_size(fields)
  return #(field(fields, 'batch') or '') + #(field(fields, 'clicks') or '') + overhead
end

local last_end = 0
local last = redis.call('XREVRANGE', stream, '+', '-', 'COUNT', 1)
if #last == 1 then
  last_end = tonumber(field(last[1][2], 'end')) or 0
end
for i = 5, #ARGV, 3 do
  last_end = last_end + #ARGV[i] + #ARGV[i + 1] + overhead
  redis.call('XADD', stream, '*', 'batch', ARGV[i], 'clicks', ARGV[i + 1], 'n', ARGV[i + 2],
    'end', string.format('%d', last_end))
end

local trimmed, lost = 0, 0
local len = redis.call('XLEN', stream)
-- Below both caps even if every entry had the largest size: nothing to read.
while len > max_len or len * max_entry > max_bytes do
  local first = redis.call('XRANGE', stream, '-', '+', 'COUNT', 1)
  if #first == 0 then
    break
  end
  local f = first[1][2]
  local size = entry_size(f)
  local start = (tonumber(field(f, 'end')) or size) - size
  if len <= max_len and last_end - start <= max_bytes then
    break
  end
  redis.call('XDEL', stream, first[1][1])
  trimmed = trimmed + 1
  local n = tonumber(field(f, 'n'))
  if n == nil then
    local _, lines = string.gsub(field(f, 'clicks') or '', '\n', '')
    n = lines
  end
  lost = lost + n
  len = len - 1
end
-- No key lives forever: the stream goes a week after its last write.
redis.call('EXPIRE', stream, ttl)
return {trimmed, lost}
