--[[
  agent-state-2: kill, revive or revoke one agent token, checked and written in the agent's slot so
  the very next request on any instance (debit-13, authorize-4) sees the new state. Revocation is
  permanent: nothing moves a revoked agent again. Repeating the current state changes nothing.
  A move appends the agent's full row and the owner's event (agent.killed / agent.revived /
  agent.revoked) to the outbox in the same script. A kill stores `kill_reason` operator (debit-13
  stores breaker when it trips); a revive clears it.

  KEYS[1] agent hash     {s}:agent:<acct>:<agent>
  KEYS[2] outbox stream  {s}:outbox

  ARGV[1] now, epoch ms
  ARGV[2] account id
  ARGV[3] agent id
  ARGV[4] action: kill | revive | revoke
  ARGV[5] where the operator acted: api | chat (named in the event; optional, default api)

  Returns {OK, version} | {ALREADY_APPLIED, version} (already in that state)
        | {AGENT_REVOKED, 0} (kill or revive of a revoked agent) | {NOT_FOUND, 0}
]]

--@include agent-entry

--@include status
local TARGET = { kill = 'killed', revive = 'active', revoke = 'revoked' }

local now, acct, agent_id, action = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local via = ARGV[5] or 'api'
local EVENT = { kill = 'agent.killed', revive = 'agent.revived', revoke = 'agent.revoked' }
local target = TARGET[action]
if not target then return redis.error_reply('agent-state: unknown action ' .. tostring(action)) end

local cur = redis.call('HMGET', KEYS[1], 'token', 'state', 'v')
if not cur[1] then return {S_NOT_FOUND, 0} end
if cur[2] == 'revoked' and target ~= 'revoked' then return {S_AGENT_REVOKED, 0} end
if cur[2] == target then return {S_ALREADY_APPLIED, tonumber(cur[3])} end

local was_reason = redis.call('HGET', KEYS[1], 'kill_reason')
redis.call('HSET', KEYS[1], 'state', target, 'changed', now)
if action == 'kill' then redis.call('HSET', KEYS[1], 'kill_reason', 'operator')
else redis.call('HDEL', KEYS[1], 'kill_reason') end
local v = redis.call('HINCRBY', KEYS[1], 'v', 1)

local a = append_agent_entry(KEYS[1], KEYS[2], acct, agent_id, v, now)
local data = {agent_id = agent_id, name = a[2], reason = 'operator', via = via}
if action ~= 'kill' and was_reason then data.was_killed_by = was_reason end
redis.call('XADD', KEYS[2], '*', 'kind', 'event', 'id', 'evt_' .. agent_id .. '_v' .. v, 'acct', acct,
  'type', EVENT[action], 'at', now, 'data', cjson.encode(data))
return {S_OK, v}
