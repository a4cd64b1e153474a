-- Run budgets (docs/api.md §13c, lib/run-budget.lua): refund.lua's and settle.lua's part.
-- A refund's or a settle's give-back to the run the call record names (`amount` credits), while
-- the run's record lives.
local function release_run(key, amount)
  if amount > 0 and redis.call('EXISTS', key) == 1 then redis.call('HINCRBY', key, 'spent', 0 - amount) end
end
