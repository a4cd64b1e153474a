--[[
  keys: 7
  authorize.lua: admit one authenticated request that moves no money (reads, governance, support):
  the token must still be the account's (rotation and revocation take effect at once, on every
  instance), the token's sliding-window rate limit must allow it, and the agent must be active —
  and so must each of its ancestors (docs/api.md §8: killing or revoking an agent stops its whole
  subtree, reads included; `by_ancestor` names the one that stops it).
  The rate limit counts before the state is answered (docs/api.md §6: every request counts), so a
  killed or revoked token past its limit is RATE_LIMITED instead of hammering forever.
  Paid requests never come here: debit.lua makes the same checks in its own single round trip.

  KEYS[1] account hash                {s}:acct:<acct>
  KEYS[2] agent hash                  {s}:agent:<acct>:<agent|_owner>
  KEYS[3] rate window, current minute {s}:rl:<acct>:<agent>:<window>
  KEYS[4] rate window, previous minute
  KEYS[5] ancestor 1's hash           \  the chain, parent first; a slot past its
  KEYS[6] ancestor 2's hash            | length repeats KEYS[2] (same slot, never read)
  KEYS[7] ancestor 3's hash           /

  ARGV[1] now, epoch ms
  ARGV[2] SHA-256 of the presented token
  ARGV[3] agent id, '' for the owner token
  ARGV[4] rate limit, requests per minute
  ARGV[5] the agent's chain: ancestor ids, parent first, joined by ',' ('' = none; may be left out)

  Returns {OK, remaining, ms_to_window_end} | {RATE_LIMITED, 0, ms until a request would be admitted, limit}
        | {UNAUTHORIZED, 0} | {AGENT_REVOKED, 0, reason ('' | expired), by_ancestor or ''}
        | {AGENT_KILLED, 0, kill_reason (operator | breaker), by_ancestor or ''}
]]

--@include status
--@include rate-window
--@include rate-read
local now, token_hash, agent_id, limit = tonumber(ARGV[1]), ARGV[2], ARGV[3], tonumber(ARGV[4])

local agent = nil
if agent_id == '' then
  if redis.call('HGET', KEYS[1], 'owner') ~= token_hash then return {S_UNAUTHORIZED, 0} end
else
  agent = redis.call('HMGET', KEYS[2], 'token', 'state', 'kill_reason', 'expires')
  if agent[1] ~= token_hash then return {S_UNAUTHORIZED, 0} end
end

local weighted, to_window_end = rate_window(now, KEYS[3], KEYS[4])
if weighted >= limit then return {S_RATE_LIMITED, 0, rate_retry_ms(now, KEYS[3], KEYS[4], limit), limit} end
rate_count(KEYS[3])

-- The agent, then its ancestors nearest first: the first that is revoked, killed or past its TTL
-- answers for the whole subtree below it.
local function stopped(fields, by)
  if fields[2] == 'revoked' then return {S_AGENT_REVOKED, 0, '', by} end
  if fields[2] == 'killed' then return {S_AGENT_KILLED, 0, fields[3] or 'operator', by} end
  if fields[4] and tonumber(fields[4]) <= now then return {S_AGENT_REVOKED, 0, 'expired', by} end
  return nil
end
if agent then
  local refusal = stopped(agent, '')
  if refusal then return refusal end
  local chain = ARGV[5] or ''
  if chain ~= '' then
    local i = 0
    for id in string.gmatch(chain, '[^,]+') do
      i = i + 1
      if i > 3 then return redis.error_reply('authorize: a chain of more than 3 ancestors') end
      refusal = stopped(redis.call('HMGET', KEYS[4 + i], 'token', 'state', 'kill_reason', 'expires'), id)
      if refusal then return refusal end
    end
  end
end
return {S_OK, limit - weighted - 1, to_window_end}
