-- The account's live agents, what the agent limit counts (docs/redis-keys.md): a sorted set of
-- lineages, `<agent>,<chain>` (the agent, then its ancestors nearest first; a top-level agent's is
-- its id), scored by the agent's expiry (+inf = none), plus the marker `_` (+inf) that says the set
-- is kept, so an account whose agents have all ended still has the key. An agent leaves it when it
-- or an ancestor is revoked (agent-state.lua removes the whole subtree in the script that revokes)
-- and, lazily, once it has expired (not counted past its score; create-agent.lua prunes). A killed
-- agent stays: the operator may revive it. recount-agents.lua builds the set from the agent hashes
-- (agents older than the set, and ledger:rebuild). Spliced in by `--@include live-agents`.
local LIVE_MARK = '_'

local function lineage(agent_id, chain)
  if chain and chain ~= '' then return agent_id .. ',' .. chain end
  return agent_id
end

-- The live agents at `now` (epoch ms): the members scored past it, less the marker.
local function live_count(key, now)
  return redis.call('ZCOUNT', key, string.format('(%d', now), '+inf') - 1
end

-- Removes an agent and its whole subtree: every lineage that names it. Ids have one length and
-- a ',' between them, so finding the id in a lineage is finding it as a whole id.
local function end_subtree(key, agent_id)
  for _, m in ipairs(redis.call('ZRANGE', key, 0, -1)) do
    if string.find(m, agent_id, 1, true) then redis.call('ZREM', key, m) end
  end
end
