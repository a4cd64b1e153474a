-- Sliding-window rate limit, shared by every script that counts requests (debit-15, authorize-7,
-- rate-limit-2): spliced in where a script says `--@include rate-window` (src/redis/scripts.ts),
-- so the window arithmetic exists once. A request's count is the current minute's plus the
-- previous minute's weighted by how much of it still overlaps the last 60 s.
local WINDOW_MS = 60000

local function window_count(key) return tonumber(redis.call('GET', key) or '0') end

-- The weighted count of requests in the sliding minute, and the ms until the current window ends.
-- `count_of` reads a window's count (a script may read through its memo; default: GET).
local function rate_window(now, cur_key, prev_key, count_of)
  count_of = count_of or window_count
  local elapsed = now % WINDOW_MS
  local current = count_of(cur_key)
  local previous = count_of(prev_key)
  return math.floor(previous * (WINDOW_MS - elapsed) / WINDOW_MS) + current, WINDOW_MS - elapsed
end

-- Counts one request in the current window; the counter gets its expiry when it is created.
-- Returns the window's new count.
local function rate_count(cur_key)
  local n = redis.call('INCR', cur_key)
  if n == 1 then redis.call('PEXPIRE', cur_key, WINDOW_MS * 2) end
  return n
end
