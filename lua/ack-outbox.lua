--[[
  keys: 1
  ack-outbox.lua: the flusher's ack of a committed batch. XACKs the ids, then trims the stream up to
  the oldest entry some consumer of the group still holds (XPENDING), or else up to the first entry
  never delivered. One XTRIM MINID drops whole stream nodes; deleting ~500 ids one by one (XDEL)
  held Redis ~1.2 ms per batch (issue 17). One script, so no consumer's delivery or ack can land
  between the summary and the trim: an entry pending anywhere, or not yet read, is never trimmed.
  An acked entry newer than another consumer's pending one stays until that one is acked too.

  KEYS[1] outbox stream   {s}:outbox

  ARGV[1]    consumer group
  ARGV[2..n] the stream ids committed to Postgres

  Returns {OK, acked, trimmed}
]]

--@include status
local stream, group = KEYS[1], ARGV[1]

-- In slices: unpack is bounded by Lua's C stack (~8000 values), and FLUSH_BATCH is not.
local acked = 0
for i = 2, #ARGV, 1000 do
  acked = acked + redis.call('XACK', stream, group, unpack(ARGV, i, math.min(i + 999, #ARGV)))
end

-- The bound: trim keeps every id >= it.
local bound
local pending = redis.call('XPENDING', stream, group)
if pending[1] > 0 then
  bound = pending[2]
else
  local delivered
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', stream)) do
    local name, last
    for i = 1, #g, 2 do
      if g[i] == 'name' then name = g[i + 1] elseif g[i] == 'last-delivered-id' then last = g[i + 1] end
    end
    if name == group then delivered = last end
  end
  if not delivered then return {S_OK, acked, 0} end
  -- The id right after the last delivered one: everything up to it is read and acked.
  local ms, seq = string.match(delivered, '^(%d+)-(%d+)$')
  bound = ms .. '-' .. (tonumber(seq) + 1)
end
return {S_OK, acked, redis.call('XTRIM', stream, 'MINID', bound)}
