-- The release along an agent's chain (lib/budget.lua, which includes this after carve_of: its
-- release_chain is release_levels with no busy hash), and settle.lua's memo of it for a batch: a hash
-- several calls of the batch release along (`busy`, an agent settling many calls in one turn) is read
-- by one HMGET the first time and written by one HSET after the batch's last call (release_flush),
-- each call applying its release to the row the calls before it left, exactly as the same calls one
-- script at a time would. Any other hash reads and writes as it goes: the memo's tables cost more than
-- they save for it.
local memo_rows, memo_keys = {}, {}

local function release_levels(hashes, day, amount, busy)
  if amount <= 0 then return end
  day = tostring(day)   -- a record without `day` ('nil') matches no hash's
  local rows, before = {}, {}
  for i, h in ipairs(hashes) do
    local r = memo_rows[h]
    if not r then
      -- A busy row always takes `carve_freed`: a later call may find it as the child on its path.
      if #hashes > 1 or busy[h] then
        r = redis.call('HMGET', h, 'state', 'budget', 'spent_total', 'day', 'day_spent', 'carved', 'carve_freed')
      else
        r = redis.call('HMGET', h, 'state', 'budget', 'spent_total', 'day', 'day_spent', 'carved')
      end
      if busy[h] then memo_rows[h], memo_keys[#memo_keys + 1] = r, h end
    end
    rows[i], before[i] = r, tonumber(r[3] or '0')
  end
  for i, h in ipairs(hashes) do
    local r = rows[i]
    local spent = before[i] - amount
    local day_spent = r[4] == day and tonumber(r[5] or '0') - amount
    local carved
    if i > 1 then
      local c = rows[i - 1]   -- the child on the path, as it was before this release
      local delta = carve_of(c[1], c[2], before[i - 1] - amount, c[7]) - carve_of(c[1], c[2], before[i - 1], c[7])
      if delta ~= 0 then carved = tonumber(r[6] or '0') + delta end
    end
    if memo_rows[h] then
      r[3] = spent
      if day_spent then r[5], r.day_moved = day_spent, true end
      if carved then r[6], r.carved_moved = carved, true end
    else
      local fields = {'spent_total', string.format('%d', spent)}
      if day_spent then fields[3], fields[4] = 'day_spent', string.format('%d', day_spent) end
      if carved then fields[#fields + 1], fields[#fields + 2] = 'carved', string.format('%d', carved) end
      redis.call('HSET', h, unpack(fields))
    end
  end
end

-- The busy rows' writes, once each, after the batch's last call: only what a release moved.
local function release_flush()
  for _, h in ipairs(memo_keys) do
    local r = memo_rows[h]
    local fields = {'spent_total', string.format('%d', r[3])}
    if r.day_moved then fields[3], fields[4] = 'day_spent', string.format('%d', r[5]) end
    if r.carved_moved then fields[#fields + 1], fields[#fields + 2] = 'carved', string.format('%d', r[6]) end
    redis.call('HSET', h, unpack(fields))
  end
end
