--[[
  keys: 4
  agent-state.lua: kill, revive or revoke one agent token, checked and written in the agent's slot so
  the very next request on any instance (debit.lua, authorize.lua) sees the new state. Revocation is
  permanent: nothing moves a revoked agent again. Repeating the current state changes nothing.
  A move appends the agent's full row and the owner's event (agent.killed / agent.revived /
  agent.revoked) to the outbox in the same script. A kill stores `kill_reason` operator (debit.lua
  stores breaker when it trips); a revive clears it.
  Sub-agents (docs/api.md §8): an agent acting (ARGV[6]) reaches only its own descendants — the
  target's chain must name it, else NOT_FOUND. A kill or revoke writes the target only: its
  descendants stop because the debit walks their chain. A revoke gives the target's unspent carve
  back to its parent (KEYS[3]), unless it expired and already gave it back (`carve_freed`,
  lua/lib/budget.lua); a killed agent keeps it, since the operator may revive it.
  A revoke also takes the target and its whole subtree out of the account's live agents (KEYS[4],
  lua/lib/live-agents.lua), freeing their places under the agent limit in the same script, so a
  create running at the same time sees either all of them counted or none. A kill keeps them.

  KEYS[1] agent hash     {s}:agent:<acct>:<agent>
  KEYS[2] outbox stream  {s}:outbox
  KEYS[3] the parent's hash {s}:agent:<acct>:<parent>  (a sub-agent's; else KEYS[1] again, unwritten)
  KEYS[4] the account's live agents {s}:live-agents:<acct>

  ARGV[1] now, epoch ms
  ARGV[2] account id
  ARGV[3] agent id
  ARGV[4] action: kill | revive | revoke
  ARGV[5] where the operator acted: api | chat (named in the event; optional, default api)
  ARGV[6] the acting agent's id, '' (or absent) for the operator

  Returns {OK, version} | {ALREADY_APPLIED, version} (already in that state)
        | {AGENT_REVOKED, 0} (kill or revive of a revoked agent) | {NOT_FOUND, 0}
]]

--@include agent-entry

--@include budget

--@include live-agents

--@include status
local TARGET = { kill = 'killed', revive = 'active', revoke = 'revoked' }

local now, acct, agent_id, action = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local via = ARGV[5] or 'api'
local EVENT = { kill = 'agent.killed', revive = 'agent.revived', revoke = 'agent.revoked' }
local target = TARGET[action]
if not target then return redis.error_reply('agent-state: unknown action ' .. tostring(action)) end

local actor = ARGV[6] or ''
local cur = redis.call('HMGET', KEYS[1], 'token', 'state', 'v', 'chain', 'parent', 'budget', 'spent_total', 'carve_freed')
if not cur[1] then return {S_NOT_FOUND, 0} end
if actor ~= '' then
  local mine = false
  for _, id in ipairs(chain_ids(cur[4])) do if id == actor then mine = true end end
  if not mine then return {S_NOT_FOUND, 0} end
end
if cur[2] == 'revoked' and target ~= 'revoked' then return {S_AGENT_REVOKED, 0} end
if cur[2] == target then return {S_ALREADY_APPLIED, tonumber(cur[3])} end

local was_reason = redis.call('HGET', KEYS[1], 'kill_reason')
redis.call('HSET', KEYS[1], 'state', target, 'changed', now)
if action == 'kill' then redis.call('HSET', KEYS[1], 'kill_reason', 'operator')
else redis.call('HDEL', KEYS[1], 'kill_reason') end
local v = redis.call('HINCRBY', KEYS[1], 'v', 1)
if target == 'revoked' and cur[5] then
  -- An expired child whose carve was already given back (carve_freed) gives nothing twice.
  redis.call('HINCRBY', KEYS[3], 'carved', 0 - carve_of(cur[2], cur[6], cur[7], cur[8]))
end
if target == 'revoked' then end_subtree(KEYS[4], agent_id) end

local a = append_agent_entry(KEYS[1], KEYS[2], acct, agent_id, v, now)
local data = {agent_id = agent_id, name = a[2], reason = 'operator', via = via, parent_id = cur[5] or cjson.null}
if actor ~= '' then data.by_agent = actor end
if action ~= 'kill' and was_reason then data.was_killed_by = was_reason end
redis.call('XADD', KEYS[2], '*', 'kind', 'event', 'id', 'evt_' .. agent_id .. '_v' .. v, 'acct', acct,
  'type', EVENT[action], 'at', now, 'data', cjson.encode(data))
return {S_OK, v}
