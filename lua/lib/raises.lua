-- Temporary raises (docs/api.md §13b): an approval with a duration writes the raised value into the
-- policy field as any approval does, and keeps what the field held before and when the raise lapses
-- in the same hash's `raises` field (JSON: {<field> = {value, base, lapses, by}}; `base` absent = the
-- field was absent). A reader at or after `lapses` takes `base` instead, so the raise ends by
-- itself with no writer; a script that later writes the hash folds lapsed raises back first.
-- Spliced in by `--@include raises` (decide-proposal.lua, set-policy.lua, create-agent.lua); the debit,
-- which only reads raises, includes lib/raised-row.lua alone.

--@include raised-row

local function write_raises(key, rs)
  if next(rs) then redis.call('HSET', key, 'raises', cjson.encode(rs)) else redis.call('HDEL', key, 'raises') end
end

-- Folds the lapsed raises of one hash back into its fields (the base restored), before a script
-- reads or writes those fields directly. Nothing else changes: the outbox entries already carry the
-- base of a standing raise (lib/agent-entry.lua, lib/account-policy-entry.lua).
local function settle_raises(key, now)
  local raw = redis.call('HGET', key, 'raises')
  if not raw then return end
  local rs = cjson.decode(raw)
  for field, x in pairs(rs) do
    if tonumber(now) >= x.lapses then
      if x.base then redis.call('HSET', key, field, x.base) else redis.call('HDEL', key, field) end
      rs[field] = nil
    end
  end
  write_raises(key, rs)
end

-- A lasting change of `field` (the owner's PUT /v1/policies, an approval without a duration) ends
-- its raise: the new value is the one that stays.
local function end_raise(key, field)
  local raw = redis.call('HGET', key, 'raises')
  if not raw then return end
  local rs = cjson.decode(raw)
  if rs[field] == nil then return end
  rs[field] = nil
  write_raises(key, rs)
end

-- Sets `field` to `value` until `lapses` (epoch ms). A raise of a field already raised keeps the
-- first base: when the last one lapses, the field goes back to what the owner had set.
local function start_raise(key, field, value, lapses, by)
  local raw = redis.call('HGET', key, 'raises')
  local rs = raw and cjson.decode(raw) or {}
  local base
  if rs[field] then base = rs[field].base else base = redis.call('HGET', key, field) or nil end
  rs[field] = { value = value, base = base, lapses = lapses, by = by }
  redis.call('HSET', key, field, value)
  write_raises(key, rs)
end
