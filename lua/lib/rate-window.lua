-- Sliding-window rate limit, shared by every script that counts requests (debit.lua, authorize.lua,
-- rate-limit.lua): spliced in where a script says `--@include rate-window` (src/redis/scripts.ts),
-- so the window arithmetic exists once. A request's count is the current minute's plus the
-- previous minute's weighted by how much of it still overlaps the last 60 s.
local WINDOW_MS = 60000

local function window_count(key) return tonumber(redis.call('GET', key) or '0') end

-- The weighted count of requests in the sliding minute, of the current and the previous window's
-- counts, and the ms until the current window ends.
local function rate_weigh(now, current, previous)
  local elapsed = now % WINDOW_MS
  return math.floor(previous * (WINDOW_MS - elapsed) / WINDOW_MS) + current, WINDOW_MS - elapsed
end

-- The same, reading both windows: `count_of` reads a window's count (a script may read through its
-- memo; default: GET).
local function rate_window(now, cur_key, prev_key, count_of)
  count_of = count_of or window_count
  return rate_weigh(now, count_of(cur_key), count_of(prev_key))
end

-- Counts one request in the current window; the counter gets its expiry when it is created.
-- Returns the window's new count.
local function rate_count(cur_key)
  local n = redis.call('INCR', cur_key)
  if n == 1 then redis.call('PEXPIRE', cur_key, WINDOW_MS * 2) end
  return n
end

-- The ms from `now` until the sliding count drops below `limit`, if no request is counted meanwhile
-- (a refused one is not): the Retry-After a client can trust. The end of the current window is not
-- it: there the current minute's count becomes the previous one's, still weighed in full, and a
-- client that had waited as told was refused again and told to wait a whole minute more.
local function rate_retry_ms(now, cur_key, prev_key, limit, count_of)
  count_of = count_of or window_count
  local elapsed = now % WINDOW_MS
  local current = count_of(cur_key)
  local previous = count_of(prev_key)
  -- The first elapsed ms of a window whose previous minute counted `p` and which counts `c` (< limit)
  -- at which floor(p * (WINDOW_MS - elapsed) / WINDOW_MS) + c is below the limit.
  local function first_below(p, c)
    if p == 0 then return 0 end
    return math.max(0, WINDOW_MS - math.ceil((limit - c) * WINDOW_MS / p) + 1)
  end
  if current < limit then return first_below(previous, current) - elapsed end
  return WINDOW_MS - elapsed + first_below(current, 0)
end
