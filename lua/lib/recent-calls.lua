-- What filing a batch of calls keeps besides each call's own record (record-calls.lua, settle.lua): the
-- recent-calls lists and the shard's public counters. Spliced in by `--@include recent-calls`.
--
-- The recent-calls lists: a list of one call of the
-- batch gets its record at once; a busy list (`many`: several calls of the batch) gathers its records,
-- in filing order, for one LPUSH after the loop (the list may pass keep + slack by the batch before
-- its trim, never after). A list is trimmed in steps of RECENT_SLACK, not on every push.
local RECENT_SLACK = 32
local recent_lists, recent_pushed = {}, {}

local function file_recent(list, record, many, keep)
  if not many then
    if redis.call('LPUSH', list, record) > keep + RECENT_SLACK then redis.call('LTRIM', list, 0, keep - 1) end
    return
  end
  local records = recent_pushed[list]
  if not records then
    records = {}
    recent_pushed[list], recent_lists[#recent_lists + 1] = records, list
  end
  records[#records + 1] = record
end

-- The busy lists' pushes, once each, after the batch's last call.
local function push_recent(keep)
  for _, list in ipairs(recent_lists) do
    if redis.call('LPUSH', list, unpack(recent_pushed[list])) > keep + RECENT_SLACK then redis.call('LTRIM', list, 0, keep - 1) end
  end
end

-- The shard's counters of organic calls (succeeded, not refunded) and the credits they kept, summed
-- over the batch and written once after it (record-calls.lua: after each shard's group of the batch,
-- so a write starts the sums afresh).
local organic_calls, honored = 0, 0
local function count_organic(charged)
  organic_calls = organic_calls + 1
  honored = honored + charged
end
local function write_organic(stats)
  if organic_calls > 0 then
    redis.call('HINCRBY', stats, 'organic_calls_routed', organic_calls)
    redis.call('HINCRBY', stats, 'credits_honored', honored)
    organic_calls, honored = 0, 0
  end
end
