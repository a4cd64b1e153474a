--[[
  keys: 3
  set-policy.lua: change policy fields of one account or one agent, and append the resulting full
  policy to the outbox in the same script. The debit script reads these fields on every call, so a
  change holds from the very next call on every instance. PUT /v1/policies runs one of these per
  account/agent inside a single MULTI, so a request's changes become visible all at once.

  KEYS[1] the account hash {s}:acct:<acct>  or  the agent hash {s}:agent:<acct>:<agent>
  KEYS[2] outbox stream    {s}:outbox
  KEYS[3] the parent's hash {s}:agent:<acct>:<parent>  of a sub-agent whose `budget` changes, so its
          carve follows (docs/api.md §8: the operator may set any budget; the parent's carved moves by
          the change of what the child holds); else KEYS[1] again, unwritten

  ARGV[1] now, epoch ms
  ARGV[2] entity: account | agent
  ARGV[3] account id
  ARGV[4] agent id ('' for the account)
  ARGV[5..] triplets: field, op (set | del), value
            account fields: daily_cap, allow, balance_cap, thresholds (the warning levels debit.lua
            reads: lua/lib/thresholds.lua); agent fields: daily_cap, allow, per_call_max,
            budget (lifetime credits), brk_credits, brk_same (the runaway-agent breaker, read by
            the debit; absent = defaults)

  A field under a temporary raise (docs/api.md §13b, lib/raises.lua) that this change sets or
  removes is the owner's again: the raise ends and the new value stays. Lapsed raises are folded
  back first.

  Returns {OK, version} | {NOT_FOUND, 0}
]]

--@include agent-entry

--@include account-policy-entry

--@include budget

--@include raises

--@include status
local FIELDS = {
  account = { daily_cap = true, allow = true, balance_cap = true, thresholds = true },
  agent = { daily_cap = true, allow = true, per_call_max = true, budget = true, brk_credits = true, brk_same = true },
}
-- The field whose presence proves the hash is a real account or agent (never create one here).
local WITNESS = { account = 'balance', agent = 'token' }

local now, entity, acct, agent_id = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local allowed = FIELDS[entity]
if not allowed then return redis.error_reply('set-policy: unknown entity ' .. tostring(entity)) end
for i = 5, #ARGV, 3 do
  if not allowed[ARGV[i]] then return redis.error_reply('set-policy: field ' .. ARGV[i] .. ' is not a policy of ' .. entity) end
  if ARGV[i + 1] ~= 'set' and ARGV[i + 1] ~= 'del' then return redis.error_reply('set-policy: bad op ' .. tostring(ARGV[i + 1])) end
end
if redis.call('HEXISTS', KEYS[1], WITNESS[entity]) == 0 then return {S_NOT_FOUND, 0} end
settle_raises(KEYS[1], now)

-- What a sub-agent holds against its parent before and after: the parent's carve follows it.
local held = nil
if entity == 'agent' then
  local a = redis.call('HMGET', KEYS[1], 'parent', 'state', 'budget', 'spent_total', 'carve_freed')
  if a[1] then held = {carve_of(a[2], a[3], a[4], a[5]), a} end
end
for i = 5, #ARGV, 3 do
  if ARGV[i + 1] == 'set' then redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 2])
  else redis.call('HDEL', KEYS[1], ARGV[i]) end
  end_raise(KEYS[1], ARGV[i])
end

if held then
  local a = held[2]
  local now_held = carve_of(a[2], redis.call('HGET', KEYS[1], 'budget'), a[4], a[5])
  if now_held ~= held[1] then redis.call('HINCRBY', KEYS[3], 'carved', now_held - held[1]) end
end

local v
if entity == 'account' then
  v = redis.call('HINCRBY', KEYS[1], 'policy_v', 1)
  append_account_policy_entry(KEYS[1], KEYS[2], acct, v, now)
else
  v = redis.call('HINCRBY', KEYS[1], 'v', 1)
  append_agent_entry(KEYS[1], KEYS[2], acct, agent_id, v, now)
end
return {S_OK, v}
