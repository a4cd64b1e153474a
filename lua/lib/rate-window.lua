-- Sliding-window rate limit, shared by every script that counts requests (debit.lua, authorize.lua,
-- rate-limit.lua): spliced in where a script says `--@include rate-window` (src/redis/scripts.ts),
-- so the window arithmetic exists once. A request's count is the current minute's plus the
-- previous minute's weighted by how much of it still overlaps the last 60 s. Reading the windows
-- and a refusal's Retry-After are lib/rate-read.lua, which the debit makes only on a refusal.
local WINDOW_MS = 60000

-- The weighted count of requests in the sliding minute, of the current and the previous window's
-- counts, and the ms until the current window ends.
local function rate_weigh(now, current, previous)
  local elapsed = now % WINDOW_MS
  return math.floor(previous * (WINDOW_MS - elapsed) / WINDOW_MS) + current, WINDOW_MS - elapsed
end

-- Counts one request in the current window; the counter gets its expiry when it is created.
-- Returns the window's new count.
local function rate_count(cur_key)
  local n = redis.call('INCR', cur_key)
  if n == 1 then redis.call('PEXPIRE', cur_key, WINDOW_MS * 2) end
  return n
end
