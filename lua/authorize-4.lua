--[[
  authorize-4: admit one authenticated request that moves no money (reads, governance, support):
  the token must still be the account's (rotation and revocation take effect at once, on every
  instance), the token's sliding-window rate limit must allow it, and the agent must be active.
  The rate limit counts before the state is answered (CONTRACT §6: every request counts), so a
  killed or revoked token past its limit is RATE_LIMITED instead of hammering forever.
  Paid requests never come here: debit-19 makes the same checks in its own single round trip.

  KEYS[1] account hash                {s}:acct:<acct>
  KEYS[2] agent hash                  {s}:agent:<acct>:<agent|_owner>
  KEYS[3] rate window, current minute {s}:rl:<acct>:<agent>:<window>
  KEYS[4] rate window, previous minute

  ARGV[1] now, epoch ms
  ARGV[2] SHA-256 of the presented token
  ARGV[3] agent id, '' for the owner token
  ARGV[4] rate limit, requests per minute

  Returns {OK, remaining, ms_to_window_end} | {RATE_LIMITED, 0, ms_to_window_end, limit}
        | {UNAUTHORIZED, 0} | {AGENT_REVOKED, 0, reason ('' | expired)} | {AGENT_KILLED, 0, kill_reason (operator | breaker)}
]]

--@include status
--@include rate-window
local now, token_hash, agent_id, limit = tonumber(ARGV[1]), ARGV[2], ARGV[3], tonumber(ARGV[4])

local agent = nil
if agent_id == '' then
  if redis.call('HGET', KEYS[1], 'owner') ~= token_hash then return {S_UNAUTHORIZED, 0} end
else
  agent = redis.call('HMGET', KEYS[2], 'token', 'state', 'kill_reason', 'expires')
  if agent[1] ~= token_hash then return {S_UNAUTHORIZED, 0} end
end

local weighted, to_window_end = rate_window(now, KEYS[3], KEYS[4])
if weighted >= limit then return {S_RATE_LIMITED, 0, to_window_end, limit} end
rate_count(KEYS[3])

if agent then
  if agent[2] == 'revoked' then return {S_AGENT_REVOKED, 0} end
  if agent[2] == 'killed' then return {S_AGENT_KILLED, 0, agent[3] or 'operator'} end
  -- A sub-agent past its TTL (CONTRACT §8); its ancestors' state is the money scripts' to check.
  if agent[4] and tonumber(agent[4]) <= now then return {S_AGENT_REVOKED, 0, 'expired'} end
end
return {S_OK, limit - weighted - 1, to_window_end}
