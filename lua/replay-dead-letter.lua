--[[
  keys: 2
  replay-dead-letter.lua: put one dead letter back into its shard's outbox (the founder fixed the
  cause), as a new entry with the original fields, and drop the dead letter, in one step: two
  replays of the same dead letter queue it once. If Postgres refuses it again, the flusher
  dead-letters it again.

  The new entry also carries `orig_id`: the stream id its script first wrote it under (the dead
  letter's `src`, or the `orig_id` an earlier replay gave it). The new id only says when it was
  replayed; readers that order an account's entries (the remainder a rebuild restores, a mandate's
  version) take the original one (src/ledger/outbox.ts, OutboxEntry.writtenId).

  KEYS[1] dead-letter stream   {s}:deadletters
  KEYS[2] outbox stream        {s}:outbox

  ARGV[1] the dead letter's stream id

  Returns {1, new outbox id} | {0, ''} when there is no such dead letter
]]

local rows = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])
if #rows == 0 then return {0, ''} end
local fields = rows[1][2]
-- Only the `f:`-prefixed fields are the entry's own (see dead-letter.lua).
local entry = {}
-- Where its script first wrote it: an earlier replay's orig_id, else the outbox id it was buried from.
local orig = nil
local src = nil
for i = 1, #fields, 2 do
  local name = fields[i]
  if name == 'f:orig_id' then
    orig = fields[i + 1]
  elseif string.sub(name, 1, 2) == 'f:' then
    entry[#entry + 1] = string.sub(name, 3)
    entry[#entry + 1] = fields[i + 1]
  elseif name == 'src' then
    src = fields[i + 1]
  end
end
if #entry == 0 then return {0, ''} end
orig = orig or src
if orig and orig ~= '' then
  entry[#entry + 1] = 'orig_id'
  entry[#entry + 1] = orig
end
local id = redis.call('XADD', KEYS[2], '*', unpack(entry))
redis.call('XDEL', KEYS[1], ARGV[1])
return {1, id}
