--[[
  keys: 2
  oauth-refresh.lua: rotate an OAuth grant's refresh token (docs/mcp-oauth.md). The presented token
  must be the grant's current one; it is then kept among the rotated ones and a new access and
  refresh token replace the current pair. A rotated token presented again means that two parties
  hold it: the whole grant is revoked (OAuth 2.1 §4.3.1, refresh token reuse detection).

  KEYS[1] the grant hash  {s}:ogrant:<acct>:<grant id>  {client, agent, tok, at, at_exp, rt}
  KEYS[2] the grant's rotated refresh hashes (a set)  {s}:ogused:<acct>:<grant id>

  ARGV[1] client_id presented
  ARGV[2] SHA-256 of the presented refresh token's secret
  ARGV[3] SHA-256 of the new access token's secret
  ARGV[4] the new access token's expiry, epoch ms
  ARGV[5] SHA-256 of the new refresh token's secret
  ARGV[6] the grant's lifetime, ms

  Returns {OK, agent id, agent token hash} | {NOT_FOUND} (no such grant, another client's, or a
  token it never issued) | {GRANT_REUSED} (a rotated token: the grant is revoked)
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

redis.call('SADD', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[1], 'at', ARGV[3], 'at_exp', ARGV[4], 'rt', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('PEXPIRE', KEYS[2], ARGV[6])
return {S_OK, rec[2], rec[3]}
