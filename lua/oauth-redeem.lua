--[[
  keys: 3
  oauth-redeem.lua: redeem an OAuth authorization code (docs/mcp-oauth.md) for the grant's first
  access and refresh tokens. A code acts once: the first presentation consumes it whatever its
  outcome; a later one finds it `used` and revokes the grant it issued (RFC 6749 §4.1.2). Every
  check is made before the first write of the grant.

  KEYS[1] the code hash   {s}:oacode:<acct>:<sha256 of the code's secret>
          {client, redirect, challenge, resource, agent, tok, exp, used}
  KEYS[2] the grant hash  {s}:ogrant:<acct>:<grant id named by the code>
  KEYS[3] the grant's rotated refresh hashes {s}:ogused:<acct>:<grant id>

  ARGV[1] now, epoch ms
  ARGV[2] client_id presented
  ARGV[3] redirect_uri presented
  ARGV[4] BASE64URL(SHA-256(code_verifier)) of the verifier presented (Redis Lua has no SHA-256)
  ARGV[5] resource presented ('' = none)
  ARGV[6] SHA-256 of the new access token's secret
  ARGV[7] the access token's expiry, epoch ms
  ARGV[8] SHA-256 of the new refresh token's secret
  ARGV[9] the grant's lifetime, ms (renewed by each refresh)

  Returns {OK, agent id, agent token hash} | {NOT_FOUND} (no such code) | {GRANT_REUSED} (the grant
  is revoked) | {GRANT_EXPIRED} | {GRANT_MISMATCH}
]]

--@include status
local now = tonumber(ARGV[1])

-- who may redeem it, and what it makes; a missing record reads as all nil
local rec = redis.call('HMGET', KEYS[1], 'client', 'redirect', 'challenge', 'resource', 'agent', 'tok', 'exp', 'used')
if not rec[1] then return {S_NOT_FOUND} end
if rec[8] then
  redis.call('DEL', KEYS[2], KEYS[3])
  return {S_GRANT_REUSED}
end
redis.call('HSET', KEYS[1], 'used', '1')
if now >= tonumber(rec[7]) then return {S_GRANT_EXPIRED} end
if rec[1] ~= ARGV[2] or rec[2] ~= ARGV[3] or rec[3] ~= ARGV[4] then return {S_GRANT_MISMATCH} end
if ARGV[5] ~= '' and rec[4] ~= '' and rec[4] ~= ARGV[5] then return {S_GRANT_MISMATCH} end

redis.call('HSET', KEYS[2], 'client', rec[1], 'agent', rec[5], 'tok', rec[6], 'at', ARGV[6], 'at_exp', ARGV[7], 'rt', ARGV[8])
redis.call('PEXPIRE', KEYS[2], ARGV[9])
return {S_OK, rec[5], rec[6]}
