-- The ids of a sub-agent's chain (docs/api.md §8): spliced in by `--@include chain-ids` (lib/budget.lua,
-- and the debit, which needs only this of it: each function a plain script makes costs it ~700
-- instructions whether it is called or not).
-- The ids of a ',' joined chain, nearest ancestor first.
local function chain_ids(chain)
  local ids = {}
  for id in string.gmatch(chain or '', '[^,]+') do ids[#ids + 1] = id end
  return ids
end
