-- What a batch of debits (src/redis/batched-scripts.ts) has read of its hashes and counters, so
-- that each is read once per batch rather than once per call: a batch's calls are mostly one
-- agent's or one fleet's, and each would re-read the account, the agent and every ancestor, where
-- an HMGET costs about as much per field as a whole small command (bench/script-cost.ts,
-- docs/decisions.md).
-- Exact because every write the script makes to what it read goes into the memo too (memo_write,
-- memo_defer, and the debit's brk_count), and nothing but the batch's own calls runs inside one script.
-- A counter (a string key holding an integer: a rate window, a day's spend) is kept as a number.
-- A hash's replies are kept per field list (`list`, a name the caller gives each list), as HMGET
-- gave them; every list read of one hash has the fields the script writes at the same positions.
-- A field may hold its string or that number (its readers take either, through tonumber).
-- A batch may also defer a hash's writes (memo_defer): the calls see them through the memo, and the
-- wrapper writes each hash once, one HSET after the batch's last call, in the same script (so as
-- atomic and as durable as writing them one by one).
-- The script alone runs without a memo and reads and writes as before: the batched wrapper gives
-- its calls one shared table of each, and its function that writes a hash's deferred fields, by
-- replacing these lines' `nil` (their markers).
local hash_memo = nil --@batch-memo
local hash_dirty = nil --@batch-dirty
local write_deferred = nil --@batch-write
local count_dirty = nil --@batch-counts
local set_adds = nil --@batch-adds
local expires = nil --@batch-expires

-- HMGET key fields..., through the memo: the list's reply as HMGET gave it the first time, shared by
-- the batch's calls (a caller writes into it only a field's parsed number).
local function memo_hmget(key, list, ...)
  if not hash_memo then return redis.call('HMGET', key, ...) end
  local m = hash_memo[key]
  if not m then
    m = {}
    hash_memo[key] = m
  end
  local reply = m[list]
  if not reply then
    reply = redis.call('HMGET', key, ...)
    m[list] = reply
    -- Writes deferred by earlier calls are not in Redis yet: a list read later must see them.
    local d = hash_dirty and hash_dirty[key]
    if d then
      local names = {...}
      for j = 1, #names do
        if d[names[j]] ~= nil then reply[j] = d[names[j]] end
      end
    end
  end
  return reply
end

-- A hash's lists are walked by `next, m`, not pairs(m): one C call less each time.
-- The batch-only functions below are made only in a batch (`hash_memo and function …`): each closure
-- made costs a plain call ~500 instructions. The script alone reads and writes Redis itself where a
-- batch calls them (`memo_count and memo_count(key) or …`); a call of a batch run without the memo
-- (its hash_memo nil) still has them, and they then do what the script alone does.

-- After the script wrote field number `pos` (of its lists) of the hash `key`: `value` is what HMGET
-- would now give, or that number.
local memo_write = hash_memo and function(key, pos, value)
  local m = hash_memo and hash_memo[key]
  if not m then return end
  for _, reply in next, m do reply[pos] = value end
end

-- A counter's value (0 when absent), through the memo.
local memo_count = hash_memo and function(key)
  if not hash_memo then return tonumber(redis.call('GET', key) or '0') end
  local n = hash_memo[key]
  if n == nil then
    n = tonumber(redis.call('GET', key) or '0')
    hash_memo[key] = n
  end
  return n
end

-- In a batch, the list's reply when a call before read it, else nil: a call that finds it passes no
-- field names (memo_hmget's dozen arguments, on every call, cost more than the lookup).
local memo_of = hash_memo and function(key, list)
  local m = hash_memo and hash_memo[key]
  return m and m[list]
end

-- In a batch: counter `key` rises by `by` (> 0), in the memo now and in Redis after the batch's last
-- call (the wrapper's flush: one INCRBY of the batch's rises, where each call would make its own); a
-- counter this creates then gets `expire_ms`, as its first INCRBY would have. Returns its count.
local memo_incr = hash_memo and function(key, by, expire_ms)
  local n = memo_count(key) + by
  hash_memo[key] = n
  local c = count_dirty[key]
  if not c then
    c = {0, n == by and expire_ms or false}
    count_dirty[key] = c
  end
  c[1] = c[1] + by
  return n
end

-- In a batch: two to four fields of hash `key` are now their values (a string, or an integer
-- formatted when written), written to Redis after the batch's last call (the wrapper's flush, or
-- memo_flush). Each is (pos: its number in the lists, field, value); the third's and the fourth's
-- pos are nil when none. One call for them all: a Lua call per field cost the debit ~2,000
-- instructions each (bench/RESULTS.md, issue 42).
local memo_defer = hash_memo and function(key, p1, f1, v1, p2, f2, v2, p3, f3, v3, p4, f4, v4)
  local m = hash_memo[key]
  if m then
    for _, reply in next, m do
      reply[p1], reply[p2] = v1, v2
      if p3 then reply[p3] = v3 end
      if p4 then reply[p4] = v4 end
    end
  end
  local d = hash_dirty[key]
  if not d then
    d = {}
    hash_dirty[key] = d
  end
  d[f1], d[f2] = v1, v2
  if p3 then d[f3] = v3 end
  if p4 then d[f4] = v4 end
end

-- In a batch: one field of hash `key` is now `value` (as memo_defer), written after the batch's last
-- call: a balance the batch's calls debit in turn is written once, not HINCRBY'd once a call. (The
-- dirty table's get-or-make is inlined here, in memo_defer and in the debit's brk_count: a shared helper cost
-- the batched debit ~1,800 instructions a call, bench/RESULTS.md, issue 42.)
local memo_set = hash_memo and function(key, pos, field, value)
  local m = hash_memo[key]
  if m then
    for _, reply in next, m do reply[pos] = value end
  end
  local d = hash_dirty[key]
  if not d then
    d = {}
    hash_dirty[key] = d
  end
  d[field] = value
end

-- ZADD key score member; in a batch, added to the batch's one ZADD of `key` after its last call
-- (the wrapper's flush). Only for a sorted set the script never reads (a debit's in-flight set).
local function memo_zadd(key, score, member)
  if not set_adds then return redis.call('ZADD', key, score, member) end
  local a = set_adds[key]
  if not a then
    a = {}
    set_adds[key] = a
  end
  a[#a + 1] = score
  a[#a + 1] = member
end

-- DEL k1 k2, and in a batch nothing of them left to read or write later (deferred fields dropped).
local memo_del = hash_memo and function(k1, k2)
  redis.call('DEL', k1, k2)
  if not hash_memo then return end
  hash_memo[k1], hash_dirty[k1], expires[k1] = nil, nil, nil
  hash_memo[k2], hash_dirty[k2], expires[k2] = nil, nil, nil
end

-- Writes `key`'s deferred fields now: before something reads the hash other than through the memo.
local memo_flush = hash_memo and function(key)
  local d = hash_dirty and hash_dirty[key]
  if not d then return end
  write_deferred(key, d)
  hash_dirty[key] = nil
end
