-- Threshold warnings (docs/api.md §13a), spliced into debit.lua after a debit's writes: a debit whose
-- spend crosses a warning level of the account's daily cap, an agent's daily cap or an agent's
-- lifetime budget tells the owner once per level and period with a `cap.threshold` event.
-- A block, not a function: a debit whose spend stays under the lowest level of every cap makes one
-- comparison per cap, creates no closure and allocates nothing (each allocation costs Redis' Lua
-- collector work: bench/script-cost.ts). It reads the debit's locals: price, acct (field 8,
-- `thresholds`), spent (the account's day spend after the debit), daily_cap, the chain as read
-- before the debit (rows, hashes, bys, budgets, spents, day_spents, each level's spend + pend, and
-- in a batch the agent's `levels`, whose arrays it takes where it walks them), agent, F_DAILY_CAP, today, call_id, agent_id, agent_ref,
-- account_id, now_s, and emit_event.
-- Levels: the account hash's `thresholds`, percentages ascending joined by ',' (absent = 50,80,100;
-- '' = off). Only a debit that crosses a level reads and writes its mark, a field of the hash it
-- limits (`thr_day`, `thr_budget`: "<period>:<highest level told>"), so a refund that lowers the
-- spend never makes a level tell twice. A daily cap's period is its HKT day and amount, a budget's
-- its amount: a changed cap arms its levels again.
if price > 0 and acct[8] ~= '' then
  local percents = acct[8] or '50,80,100'
  -- The lowest level: a scope whose spend stays under it is passed over at one comparison.
  local lowest = 50
  if acct[8] then lowest = tonumber(string.match(percents, '^%d+')) or 101 end
  local due = daily_cap > 0 and lowest * daily_cap <= spent * 100
  if not due and agent then
    -- A level is due when lowest × cap <= (its spend + pend + price) × 100: the least of
    -- lowest × cap − spend × 100 over the levels' caps and budgets, in a batch made once per summary.
    local need = false
    if levels and levels.thr_lowest == lowest then
      need = levels.thr_need
    else
      if levels and rows == NONE then rows, hashes, bys, budgets, spents, day_spents = levels[1], levels[2], levels[3], levels[4], levels[5], levels[6] end
      for i = 1, #rows do
        local cap, budget = rows[i][F_DAILY_CAP], budgets[i]
        if cap and cap > 0 and (not need or lowest * cap - day_spents[i] * 100 < need) then need = lowest * cap - day_spents[i] * 100 end
        if budget and budget > 0 and (not need or lowest * budget - spents[i] * 100 < need) then need = lowest * budget - spents[i] * 100 end
      end
      if levels then levels.thr_lowest, levels.thr_need = lowest, need end
    end
    due = need and need <= (pend + price) * 100
  end
  if due then
    if levels and rows == NONE then rows, hashes, bys, budgets, spents, day_spents = levels[1], levels[2], levels[3], levels[4], levels[5], levels[6] end
    -- Some spend reached the lowest level: each scope's highest level in (before, after] (the
    -- levels are ascending) and, when there is one, each level up to it not told yet this period
    -- (the mark), each its own event.
    local function weigh(hash, field, period, scope, who, kind, cap, before)
      if not cap or cap <= 0 then return end
      local after, top = before + price, 0
      for l in string.gmatch(percents, '%d+') do
        l = tonumber(l)
        if l * cap > after * 100 then break end
        if l * cap > before * 100 then top = l end
      end
      if top == 0 then return end
      period = period .. string.format('%d', cap)
      local told = 0
      local mark = redis.call('HGET', hash, field)
      if mark then
        local was, level = string.match(mark, '^(.*):(%d+)$')
        if was == period then told = tonumber(level) end
      end
      if top <= told then return end
      redis.call('HSET', hash, field, period .. ':' .. top)
      for l in string.gmatch(percents, '%d+') do
        l = tonumber(l)
        if l > told and l <= top and l * cap > before * 100 then
          emit_event(KEYS[8], account_id, now_s, 'evt_' .. call_id .. '_thr_' .. (who or 'acct') .. '_' .. kind .. '_' .. l, 'cap.threshold',
            {scope = scope, agent_id = who or agent_ref, cap_kind = kind, percent = l, cap = cap, spent = after, call_id = call_id})
        end
      end
    end
    weigh(KEYS[1], 'thr_day', today .. '/', 'account', nil, 'daily_cap', daily_cap, spent - price)
    for i = 1, #rows do
      local who = bys[i] ~= '' and bys[i] or agent_id
      weigh(hashes[i], 'thr_day', today .. '/', 'agent', who, 'daily_cap', rows[i][F_DAILY_CAP], day_spents[i] + pend)
      weigh(hashes[i], 'thr_budget', '', 'agent', who, 'budget', budgets[i], spents[i] + pend)
    end
  end
end
