-- Reading the rate windows of lib/rate-window.lua (included after it): a window's count, the
-- weighted count of both, and a refusal's Retry-After. A script that reads its windows another way
-- (the debit: one MGET, or its batch's memo) includes this only where it refuses, so a call it
-- admits makes none of these functions (each costs a plain call ~500 instructions).
local function window_count(key) return tonumber(redis.call('GET', key) or '0') end

-- The weighted count of both windows and the ms until the current one ends (rate_weigh), reading
-- them: `count_of` reads a window's count (a script may read through its memo; default: GET).
local function rate_window(now, cur_key, prev_key, count_of)
  count_of = count_of or window_count
  return rate_weigh(now, count_of(cur_key), count_of(prev_key))
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
