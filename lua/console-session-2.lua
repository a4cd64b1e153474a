--[[
  console-session-2: whether an owner console session still stands. It stands while it has not
  expired and the owner token it signed in with is still the account's owner token; a rotated
  token ends it here, on its next use, on every instance (the session is deleted so that a later
  rotation back cannot revive it).

  KEYS[1] the session hash {owner, csrf, exp}, under the SHA-256 of the session id
  KEYS[2] the account hash (its `owner` field: the current owner token's SHA-256)

  ARGV[1] now, epoch ms (app clock)

  Returns {OK, csrf} | {UNAUTHORIZED}
]]

--@include status
local now = tonumber(ARGV[1])

-- owner hash at sign-in, form token, expiry of the session; a missing record reads as all nil
local rec = redis.call('HMGET', KEYS[1], 'owner', 'csrf', 'exp')
if not rec[1] then return {S_UNAUTHORIZED} end
if now >= tonumber(rec[3]) or redis.call('HGET', KEYS[2], 'owner') ~= rec[1] then
  redis.call('DEL', KEYS[1])
  return {S_UNAUTHORIZED}
end
return {S_OK, rec[2]}
