--[[
  rate-limit-2: sliding-window request counter for requests that do not pass through the debit
  script (reads, governance calls, unauthenticated requests). Same window arithmetic as debit-13.

  KEYS[1] counter of the current minute window
  KEYS[2] counter of the previous minute window

  ARGV[1] now, epoch ms
  ARGV[2] limit, requests per minute

  Returns {OK, remaining, ms_to_window_end} | {RATE_LIMITED, 0, ms_to_window_end}
]]

local S_OK, S_RATE = 0, 5
local WINDOW_MS = 60000
local now, limit = tonumber(ARGV[1]), tonumber(ARGV[2])

local elapsed = now % WINDOW_MS
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local previous = tonumber(redis.call('GET', KEYS[2]) or '0')
local weighted = math.floor(previous * (WINDOW_MS - elapsed) / WINDOW_MS) + current
if weighted >= limit then return {S_RATE, 0, WINDOW_MS - elapsed} end
redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], WINDOW_MS * 2)
return {S_OK, limit - weighted - 1, WINDOW_MS - elapsed}
