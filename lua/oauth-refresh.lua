--[[
  keys: 3
  oauth-refresh.lua: rotate an OAuth grant's refresh token (docs/mcp-oauth.md). The presented token
  must be the grant's current one; it is then kept among the rotated ones and a new access and
  refresh token replace the current pair. A rotated token presented again means that two parties
  hold it: the whole grant is revoked (OAuth 2.1 §4.3.1, refresh token reuse detection). A grant
  whose agent is revoked or past its expiry ends at its refresh (nothing can bring the agent back);
  a killed agent's grant rotates, so that a revive lets the client go on.

  KEYS[1] the grant hash  {s}:ogrant:<acct>:<grant id>  {client, agent, tok, at, at_exp, rt}
  KEYS[2] the grant's rotated refresh hashes (a set)  {s}:ogused:<acct>:<grant id>
  KEYS[3] the grant's agent's hash  {s}:agent:<acct>:<agent id>  (the caller read the id from KEYS[1])

  ARGV[1] client_id presented
  ARGV[2] SHA-256 of the presented refresh token's secret
  ARGV[3] SHA-256 of the new access token's secret
  ARGV[4] the new access token's expiry, epoch ms
  ARGV[5] SHA-256 of the new refresh token's secret
  ARGV[6] the grant's lifetime, ms
  ARGV[7] the agent id KEYS[3] names
  ARGV[8] now, epoch ms

  Returns {OK, agent id, agent token hash} | {NOT_FOUND} (no such grant, another client's, a token
  it never issued, or another agent's KEYS[3]) | {GRANT_REUSED} (a rotated token: the grant is
  revoked) | {GRANT_AGENT_ENDED} (its agent revoked or expired: the grant is deleted)
]]

--@include status
local rec = redis.call('HMGET', KEYS[1], 'client', 'agent', 'tok', 'rt')
if not rec[1] or rec[1] ~= ARGV[1] then return {S_NOT_FOUND} end
if rec[4] ~= ARGV[2] then
  if redis.call('SISMEMBER', KEYS[2], ARGV[2]) == 1 then
    redis.call('DEL', KEYS[1], KEYS[2])
    return {S_GRANT_REUSED}
  end
  return {S_NOT_FOUND}
end
if rec[2] ~= ARGV[7] then return {S_NOT_FOUND} end
local agent = redis.call('HMGET', KEYS[3], 'state', 'expires')
if agent[1] == false or agent[1] == 'revoked' or (agent[2] and tonumber(agent[2]) <= tonumber(ARGV[8])) then
  redis.call('DEL', KEYS[1], KEYS[2])
  return {S_GRANT_AGENT_ENDED}
end

redis.call('SADD', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[1], 'at', ARGV[3], 'at_exp', ARGV[4], 'rt', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('PEXPIRE', KEYS[2], ARGV[6])
return {S_OK, rec[2], rec[3]}
