-- The agent's whole row as an `agent` outbox entry of version v: the Postgres projection keeps the
-- highest version it has seen, so redelivered or late entries never roll it back. Spliced in by
-- `--@include agent-entry` wherever an agent changes (create-agent.lua, agent-state.lua, set-policy.lua,
-- the breaker trip of debit.lua). Returns the row read, {token, name, state, created, ...}.
local function append_agent_entry(agent_key, outbox_key, acct, agent_id, v, now)
  local a = redis.call('HMGET', agent_key, 'token', 'name', 'state', 'created', 'daily_cap', 'allow', 'per_call_max',
    'parent', 'chain', 'depth', 'budget', 'expires', 'spent_total', 'raises')
  -- A standing temporary raise enters the entry as its base: the projection keeps the lasting
  -- policy, so a rebuild from it ends a raise early and never makes one last (lib/raises.lua).
  if a[14] then
    for f, x in pairs(cjson.decode(a[14])) do a[({ daily_cap = 5, allow = 6, budget = 11 })[f]] = x.base or false end
  end
  local e = {'kind', 'agent', 'id', agent_id .. ':v' .. v, 'acct', acct, 'agent', agent_id, 'token', a[1],
    'name', a[2], 'state', a[3], 'created', a[4], 'v', v, 'at', now}
  if a[5] then e[#e + 1] = 'daily_cap'; e[#e + 1] = a[5] end
  if a[6] then e[#e + 1] = 'allow'; e[#e + 1] = a[6] end
  if a[7] then e[#e + 1] = 'per_call_max'; e[#e + 1] = a[7] end
  -- The sub-agent tree and budget (docs/api.md §8); spent_total rides along for reading only: a
  -- rebuild derives it from the ledger, which is exact where a snapshot may be stale.
  local extra = {'parent', 'chain', 'depth', 'budget', 'expires', 'spent_total'}
  for i, f in ipairs(extra) do
    if a[7 + i] then e[#e + 1] = f; e[#e + 1] = a[7 + i] end
  end
  redis.call('XADD', outbox_key, '*', unpack(e))
  return a
end
