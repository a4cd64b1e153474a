--[[
  keys: 1
  claim-link.lua: the single use of a vault link. Two submissions of the same link race here and
  exactly one gets OK; the other sees the used marker. Expiry is decided by the app clock stored
  in the record (the Redis TTL only collects garbage), so an injected clock can expire a link.

  KEYS[1] the link record, a hash {acct, provider, exp[, used, used_at]}, under its code's SHA-256

  ARGV[1] now, epoch ms (app clock)
  ARGV[2] claim id: release-link.lua undoes only this claim
  ARGV[3] how long the used marker is kept, ms (a reuse then says LINK_USED, not LINK_INVALID)

  Returns {OK, acct, provider} | {LINK_INVALID} | {LINK_USED}
]]

--@include status
local now = tonumber(ARGV[1])

-- acct, provider, exp, used of the link; a missing record reads as all nil
local rec = redis.call('HMGET', KEYS[1], 'acct', 'provider', 'exp', 'used')
if not rec[1] then return {S_LINK_INVALID} end
if rec[4] then return {S_LINK_USED} end
if now >= tonumber(rec[3]) then return {S_LINK_INVALID} end

redis.call('HSET', KEYS[1], 'used', ARGV[2], 'used_at', now)
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
return {S_OK, rec[1], rec[2]}
