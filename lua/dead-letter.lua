--[[
  keys: 2
  dead-letter.lua: move one outbox entry that Postgres refuses (tried alone, an error about that
  entry's data) to the shard's dead-letter stream, and take it out of the outbox, in one step: it
  is never both in the outbox and dead-lettered, nor in neither. The fields are copied here, from
  the stream itself, so the dead letter holds the entry exactly as the script that wrote it did.
  Not a money decision: nothing is credited or debited; the entry waits for the founder.

  KEYS[1] outbox stream        {s}:outbox
  KEYS[2] dead-letter stream   {s}:deadletters

  ARGV[1] consumer group of the outbox
  ARGV[2] the entry's outbox stream id
  ARGV[3] why Postgres refused it (one line)
  ARGV[4] now, epoch ms

  Returns {1, dead-letter id} | {0, ''} when the entry is no longer in the outbox (another flusher
  already moved or committed it: nothing is done twice)
]]

local rows = redis.call('XRANGE', KEYS[1], ARGV[2], ARGV[2])
if #rows == 0 then return {0, ''} end
local fields = rows[1][2]
-- The original field names get an `f:` prefix, so they never collide with the dead letter's own.
local out = {'src', ARGV[2], 'error', ARGV[3], 'at', ARGV[4]}
for i = 1, #fields, 2 do
  out[#out + 1] = 'f:' .. fields[i]
  out[#out + 1] = fields[i + 1]
end
local id = redis.call('XADD', KEYS[2], '*', unpack(out))
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
return {1, id}
