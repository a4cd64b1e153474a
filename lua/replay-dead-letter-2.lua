--[[
  replay-dead-letter-2: put one dead letter back into its shard's outbox (the founder fixed the
  cause), as a new entry with the original fields, and drop the dead letter, in one step: two
  replays of the same dead letter queue it once. If Postgres refuses it again, the flusher
  dead-letters it again.

  KEYS[1] dead-letter stream   {s}:deadletters
  KEYS[2] outbox stream        {s}:outbox

  ARGV[1] the dead letter's stream id

  Returns {1, new outbox id} | {0, ''} when there is no such dead letter
]]

local rows = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])
if #rows == 0 then return {0, ''} end
local fields = rows[1][2]
-- Only the `f:`-prefixed fields are the entry's own (see dead-letter-2).
local entry = {}
for i = 1, #fields, 2 do
  if string.sub(fields[i], 1, 2) == 'f:' then
    entry[#entry + 1] = string.sub(fields[i], 3)
    entry[#entry + 1] = fields[i + 1]
  end
end
if #entry == 0 then return {0, ''} end
local id = redis.call('XADD', KEYS[2], '*', unpack(entry))
redis.call('XDEL', KEYS[1], ARGV[1])
return {1, id}
