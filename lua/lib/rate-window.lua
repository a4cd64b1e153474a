-- Sliding-window rate limit, shared by every script that counts requests (debit-15, authorize-7,
-- rate-limit-2): spliced in where a script says `--@include rate-window` (src/redis/scripts.ts),
-- so the window arithmetic exists once. A request's count is the current minute's plus the
-- previous minute's weighted by how much of it still overlaps the last 60 s.
local WINDOW_MS = 60000

-- The weighted count of requests in the sliding minute, and the ms until the current window ends.
local function rate_window(now, cur_key, prev_key)
  local elapsed = now % WINDOW_MS
  local current = tonumber(redis.call('GET', cur_key) or '0')
  local previous = tonumber(redis.call('GET', prev_key) or '0')
  return math.floor(previous * (WINDOW_MS - elapsed) / WINDOW_MS) + current, WINDOW_MS - elapsed
end

-- Counts one request in the current window; the counter gets its expiry when it is created.
local function rate_count(cur_key)
  if redis.call('INCR', cur_key) == 1 then redis.call('PEXPIRE', cur_key, WINDOW_MS * 2) end
end
