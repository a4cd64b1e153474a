-- The recent-calls lists a batch files into (record-calls.lua, settle.lua): a list of one call of the
-- batch gets its record at once; a busy list (`many`: several calls of the batch) gathers its records,
-- in filing order, for one LPUSH after the loop (the list may pass keep + slack by the batch before
-- its trim, never after). A list is trimmed in steps of RECENT_SLACK, not on every push. Spliced in
-- by `--@include recent-calls`.
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
