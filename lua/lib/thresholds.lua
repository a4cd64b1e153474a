-- Threshold warnings (docs/api.md §13a): a debit whose spend crosses a level of a daily cap or of an
-- agent's lifetime budget tells the owner once per level and period with a `cap.threshold` event.
-- The levels are the account hash's `thresholds` (percentages, ascending, joined by ','; absent =
-- the default below, '' = off), read with the fields the debit reads anyway. A crossing is found by
-- arithmetic on numbers the debit already holds: only a debit that crosses a level reads and writes
-- its mark, a field of the hash it limits (`thr_day`, `thr_budget`: "<period>:<highest level told>"),
-- so a refund that lowers the spend never makes a level tell twice. A daily cap's period is its HKT
-- day and cap, a budget's its cap: a cap the operator changes arms its levels again.
local THRESHOLDS_DEFAULT = {50, 80, 100}

-- The levels of field `pos` of the account's reply, parsed once: a batch shares that reply among
-- its calls (lib/hash-memo.lua), so the parsed list replaces the string there.
local function threshold_levels(acct_row, pos)
  local spec = acct_row[pos]
  if not spec then return THRESHOLDS_DEFAULT end
  if type(spec) == 'table' then return spec end
  local levels = {}
  for p in string.gmatch(spec, '%d+') do levels[#levels + 1] = tonumber(p) end
  acct_row[pos] = levels
  return levels
end

-- The highest level of `cap` in (before, after], or 0: arithmetic only, the common debit's whole cost.
local function threshold_crossed(levels, before, after, cap)
  local top = 0
  if cap and cap > 0 then
    for _, p in ipairs(levels) do
      if before * 100 < p * cap and p * cap <= after * 100 then top = p end
    end
  end
  return top
end

-- Tells the levels in (before, after] up to `top`, past the one the mark in `field` of `hash`
-- already holds for `period`; `data` is the event's payload without its `percent`.
local function tell_thresholds(levels, top, hash, field, period, before, after, cap, id_base, data)
  local told = 0
  local mark = redis.call('HGET', hash, field)
  if mark then
    local was, level = string.match(mark, '^(.*):(%d+)$')
    if was == period then told = tonumber(level) end
  end
  if top <= told then return end
  redis.call('HSET', hash, field, period .. ':' .. top)
  for _, p in ipairs(levels) do
    if p > told and before * 100 < p * cap and p * cap <= after * 100 then
      data.percent = p
      emit(id_base .. '_' .. p, 'cap.threshold', data)
    end
  end
end

-- Every scope a debit of `price` moved: the account's daily spend (`acct_spent` after the debit),
-- then each level of the agent's chain (its HMGET reply `rows[i]`, whose field `cap_at` is its daily
-- cap as a number, and the numbers the debit read before it: `budgets[i]`, `spents[i]`, `day_spents[i]`).
local function warn_thresholds(levels, price, today, call_id, caller, acct_spent, acct_cap, rows, cap_at, hashes, bys, budgets, spents, day_spents)
  if #levels == 0 then return end
  local function fmt(n) return string.format('%d', n) end
  local base = 'evt_' .. call_id .. '_thr_'
  local top = threshold_crossed(levels, acct_spent - price, acct_spent, acct_cap)
  if top > 0 then
    tell_thresholds(levels, top, KEYS[1], 'thr_day', today .. '/' .. fmt(acct_cap), acct_spent - price, acct_spent, acct_cap, base .. 'acct_day',
      {scope = 'account', agent_id = caller, cap_kind = 'daily_cap', cap = acct_cap, spent = acct_spent, call_id = call_id})
  end
  for i = 1, #rows do
    local cap, day_before = rows[i][cap_at], day_spents[i]
    top = threshold_crossed(levels, day_before, day_before + price, cap)
    if top > 0 then
      local who = bys[i] ~= '' and bys[i] or caller
      tell_thresholds(levels, top, hashes[i], 'thr_day', today .. '/' .. fmt(cap), day_before, day_before + price, cap, base .. who .. '_day',
        {scope = 'agent', agent_id = who, cap_kind = 'daily_cap', cap = cap, spent = day_before + price, call_id = call_id})
    end
    cap = budgets[i]
    top = threshold_crossed(levels, spents[i], spents[i] + price, cap)
    if top > 0 then
      local who = bys[i] ~= '' and bys[i] or caller
      tell_thresholds(levels, top, hashes[i], 'thr_budget', fmt(cap), spents[i], spents[i] + price, cap, base .. who .. '_budget',
        {scope = 'agent', agent_id = who, cap_kind = 'budget', cap = cap, spent = spents[i] + price, call_id = call_id})
    end
  end
end
