--[[
  keys: 4
  console-session.lua: whether an owner console session still stands. It stands while it has not
  expired and the owner token it signed in with is still the account's owner token; a rotated
  token ends it here, on its next use, on every instance (the session is deleted so that a later
  rotation back cannot revive it). A standing session's request counts against the owner token's
  rate limit, as the same request over the API would (docs/api.md §6: every request counts).

  KEYS[1] the session hash {owner, csrf, exp}, under the SHA-256 of the session id
  KEYS[2] the account hash (its `owner` field: the current owner token's SHA-256)
  KEYS[3] the owner token's rate window, current minute {s}:rl:<acct>:_owner:<window>
  KEYS[4] the owner token's rate window, previous minute

  ARGV[1] now, epoch ms (app clock)
  ARGV[2] rate limit, requests per minute per token

  Returns {OK, csrf} | {UNAUTHORIZED} | {RATE_LIMITED, 0, ms until a request would be admitted, limit}
]]

--@include status
--@include rate-window
--@include rate-read
local now, limit = tonumber(ARGV[1]), tonumber(ARGV[2])

-- owner hash at sign-in, form token, expiry of the session; a missing record reads as all nil
local rec = redis.call('HMGET', KEYS[1], 'owner', 'csrf', 'exp')
if not rec[1] then return {S_UNAUTHORIZED} end
if now >= tonumber(rec[3]) or redis.call('HGET', KEYS[2], 'owner') ~= rec[1] then
  redis.call('DEL', KEYS[1])
  return {S_UNAUTHORIZED}
end
local weighted, to_window_end = rate_window(now, KEYS[3], KEYS[4])
if weighted >= limit then return {S_RATE_LIMITED, 0, rate_retry_ms(now, KEYS[3], KEYS[4], limit), limit} end
rate_count(KEYS[3])
return {S_OK, rec[2]}
