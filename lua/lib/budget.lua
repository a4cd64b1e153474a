-- Agent budgets and the sub-agent tree (docs/api.md §8), shared by every script that moves an agent's
-- lifetime spend or carves a budget (debit, refund, create-agent, agent-state, set-policy).
-- An agent hash carries `budget` (lifetime credits; absent = none), `spent_total` (its own and its
-- whole subtree's spend), `carved` (what its live children may still spend of the budgets carved
-- from it) and, for a sub-agent, `parent` and `chain` (ancestor ids, nearest first, joined by ',').
-- What a child still holds against its parent: its unspent budget while it is not revoked and its
-- carve has not been freed. A child without a budget (the operator removed it) holds nothing: its
-- spend is bounded by the parent's own budget check in the debit. `carve_freed` ('1') marks an
-- expired child whose carve went back to its parent (release-expired.lua, recount-agents.lua,
-- ledger:rebuild): expiry has no writer of its own, so it is given back once, lazily, by whichever of
-- those runs first, and every later carve computation (a revoke, a budget change, a refund's or a
-- settle's release) must see that the child holds nothing any more.
local function carve_of(state, budget, spent, freed)
  if state == 'revoked' or freed or not budget then return 0 end
  local left = tonumber(budget) - tonumber(spent or '0')
  return left > 0 and left or 0
end

-- What an agent may still carve or spend: budget − spent_total − carved (nil = no budget).
local function budget_left(budget, spent, carved)
  if not budget then return nil end
  return tonumber(budget) - tonumber(spent or '0') - tonumber(carved or '0')
end

--@include chain-ids

--@include release-memo

-- Gives `amount` back along an agent's chain (a refund, or a settle's release): hashes[1] is the
-- agent, hashes[i + 1] its ancestors nearest first; `day` the HKT day the call was debited on (the
-- call record's). Each level's spent_total goes down, and its day spend (`day_spent`, the spend of
-- the hash's `day`) only while `day` is still the call's: only day windows that still exist move,
-- a release after midnight leaves the new day's spend alone. Each ancestor's carve grows by what
-- the child on the path holds more now, exactly undoing the debit's shrink. One HMGET and one HSET
-- per level, the carve set in the ancestor's own HSET (values computed from its HMGET). A child
-- whose carve was freed (it expired) holds nothing either side of the release: its parent's carve
-- stays. Only a chain with an ancestor reads that marker (a lone agent has no carve to move).
local NO_BUSY = {}
local function release_chain(hashes, day, amount) release_levels(hashes, day, amount, NO_BUSY) end
