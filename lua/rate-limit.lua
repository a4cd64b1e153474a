--[[
  keys: 2
  rate-limit.lua: sliding-window request counter for requests that do not pass through the debit
  script (reads, governance calls, unauthenticated requests). The same window arithmetic as debit.lua (lua/lib/rate-window.lua).

  KEYS[1] counter of the current minute window
  KEYS[2] counter of the previous minute window

  ARGV[1] now, epoch ms
  ARGV[2] limit, requests per minute

  Returns {OK, remaining, ms_to_window_end} | {RATE_LIMITED, 0, ms until a request would be admitted}
]]

--@include status
--@include rate-window
--@include rate-read
local now, limit = tonumber(ARGV[1]), tonumber(ARGV[2])

local weighted, to_window_end = rate_window(now, KEYS[1], KEYS[2])
if weighted >= limit then return {S_RATE_LIMITED, 0, rate_retry_ms(now, KEYS[1], KEYS[2], limit)} end
rate_count(KEYS[1])
return {S_OK, limit - weighted - 1, to_window_end}
