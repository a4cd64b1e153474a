--[[
  keys: n (a batch: each call's KEYS follow the shared ones; the count is sent with the call)
  release-expired.lua: give the carve of each listed expired agent back to its parent, once, and take
  the agent out of the account's live-agent set (lua/lib/live-agents.lua). Expiry has no writer of
  its own: an agent past `expires` can spend nothing more (debit.lua and authorize.lua refuse it), but
  what it still held against its parent (lua/lib/budget.lua carve_of) stayed in the parent's
  `carved`, so the parent could never hand that budget out again. create-agent.lua, the one script
  that decides on `carved`, answers RELEASE_EXPIRED while the set holds an expired agent; the
  caller lists the set's expired members, runs this, and creates again.
  Each lineage is checked here, not trusted from the listing: one that is gone (a revoke took it
  out, and gave its carve back itself; or another instance released it) or not past its score is
  skipped. A released agent is marked `carve_freed`, which every later carve computation honours
  (a revoke, a budget change, a refund's or a settle's release give nothing twice). A top-level
  agent has no parent: it is only marked and taken out.

  The number of KEYS is 1 + 2 × the lineages listed:
  KEYS[1]          the account's live agents {s}:live-agents:<acct>
  KEYS[1 + 2i - 1] the i-th lineage's agent hash  {s}:agent:<acct>:<agent>
  KEYS[1 + 2i]     its parent's hash              {s}:agent:<acct>:<parent>  (a top-level agent: its own again, unwritten)

  ARGV[1]      now, epoch ms
  ARGV[1 + i]  the i-th lineage, `<agent>,<chain>` as the set holds it

  Returns {OK, agents released}
]]

--@include budget

--@include status
local now = tonumber(ARGV[1])
local released = 0
for i = 1, #ARGV - 1 do
  local member = ARGV[1 + i]
  local score = redis.call('ZSCORE', KEYS[1], member)
  if score and tonumber(score) <= now then
    local ids = chain_ids(member)
    local child, parent = KEYS[1 + 2 * i - 1], KEYS[1 + 2 * i]
    local a = redis.call('HMGET', child, 'state', 'budget', 'spent_total', 'carve_freed', 'parent')
    if (a[5] or false) ~= (ids[2] or false) then
      return redis.error_reply('release-expired: ' .. member .. ' is not the tree')
    end
    if a[5] then redis.call('HINCRBY', parent, 'carved', 0 - carve_of(a[1], a[2], a[3], a[4])) end
    redis.call('HSET', child, 'carve_freed', '1')
    redis.call('ZREM', KEYS[1], member)
    released = released + 1
  end
end
return {S_OK, released}
