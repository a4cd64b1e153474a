--[[
  keys: n (a batch: each call's KEYS follow the shared ones; the count is sent with the call)
  record-calls.lua: file the outcomes of finished calls of one shard (metadata only, never payloads),
  a batch in one script: each call's account's recent-calls list for /v1/activity, the outbox (so
  Postgres keeps it), the shard's public counters, and the stored answer of an Idempotency-Key. Not
  a money decision: the money moved in debit/refund already. A filed call's record is marked
  `filed` (kept its charge or refunded before), so a stray late refund of it can never apply. A
  call is recorded once: a resent script (lost reply), a sweeper racing the request's own record,
  or the same call twice in one batch changes nothing the second time.
  Why a batch (issue 17): every settled call used to cost one EVALSHA of its own — a command for
  ioredis to build, write and parse, and one script start in Redis. The app gathers the calls of a
  shard settled in one turn of its event loop (src/paid-request/call-filing.ts) and files them together.

  The number of KEYS is 3 + 3 × the calls in the batch (ioredis is told it with each call):
  KEYS[1] shard counters      {s}:stats
  KEYS[2] outbox stream       {s}:outbox
  KEYS[3] in-flight calls     {s}:inflight
  and for the i-th call (i from 1), at KEYS[3 + 3(i-1) + j]:
    j = 1  recent calls list   {s}:calls:<acct>
    j = 2  idempotency record  {s}:idem:<acct>:<agent|_owner>:<key>  (without a key: j = 3 again, never
           touched; a repeated key costs the script less than a new string)
    j = 3  call record         {s}:call:<call_id>

  ARGV[1] how many recent calls a list keeps (it may hold up to 32 more, trimmed in steps)
  ARGV[2] seconds the call record is kept from now on: filed, it only guards against a resent
          script (the debit gave it two days, for a refund that may still come)
  and for the i-th call, at ARGV[2 + 6(i-1) + j]:
    j = 1  call record, JSON
    j = 2  call id
    j = 3  account id (its in-flight member is `<acct>|<call_id>`)
    j = 4  the credits the call kept when it counts as organic (succeeded, not refunded), else ''
    j = 5  '' without a key; 'store' to keep the answer for replay; 'release' to free the key
    j = 6  the answer to replay, JSON (with 'store'), else ''

  Returns one status per call, in order: {OK | ALREADY_APPLIED, ...}
]]

--@include status
-- The TTL goes to EXPIRE as given: a Lua number would be formatted anew for every call.
local keep, settled_ttl = tonumber(ARGV[1]), ARGV[2]
local n = (#KEYS - 3) / 3
if n ~= math.floor(n) or #ARGV ~= 2 + 6 * n then return redis.error_reply('record-calls: ' .. #KEYS .. ' keys, ' .. #ARGV .. ' args') end
-- Readers take the newest `keep` (LRANGE 0..n-1); the few older ones past it go at the next trim.
--@include recent-calls
local out = {}
-- The in-flight members of the calls filed, taken out by one ZREM after the loop (one command, not n).
local landed = {}
-- The lists of a busy account the batch files several calls of (true), each of the rest false
-- (lib/recent-calls.lua): a list of one call is pushed as it goes, the tables costing more than they save.
local shared = {}
for i = 1, n do
  local list = KEYS[4 + 3 * (i - 1)]
  shared[list] = shared[list] ~= nil
end

-- Every redis.call costs ~1-2 µs of Redis' one thread on each paid call (issue 17): the call hash is
-- read and written once, and a list is trimmed in steps of RECENT_SLACK (lib/recent-calls.lua) rather than on every push.
for i = 1, n do
  local k, a = 3 + 3 * (i - 1), 2 + 6 * (i - 1)
  local list, idem, call_key = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  -- `honored` stays the string it came as: the XADD takes it as given, and only the counters parse it
  -- (a tonumber is a strtod, a Lua number passed to a command a printf).
  local record, call_id, honored, idem_mode = ARGV[a + 1], ARGV[a + 2], ARGV[a + 4], ARGV[a + 5]
  -- The claim, one write where HMGET + HSET were: HSET answers the fields it added, 1 (`recorded`)
  -- the first time, 0 once filed. `filed` closes the call whether it kept its charge or was refunded
  -- before (refund.lua and settle.lua apply only to a 'debited' one; the record filed says which).
  if redis.call('HSET', call_key, 'recorded', '1', 'state', 'filed') == 0 then
    out[i] = S_ALREADY_APPLIED
  else
    redis.call('EXPIRE', call_key, settled_ttl)
    landed[#landed + 1] = ARGV[a + 3] .. '|' .. call_id
    file_recent(list, record, shared[list], keep)
    if idem_mode == 'store' then
      redis.call('HSET', idem, 'state', 'done', 'response', ARGV[a + 6])
      redis.call('EXPIRE', idem, '86400')
    elseif idem_mode == 'release' then
      -- A refunded call keeps nothing: the same key may be retried and will be charged then.
      redis.call('DEL', idem)
    end
    -- `organic` and `charged` (an organic call's) beside the record: the flusher's metrics read them
    -- without parsing it.
    if honored ~= '' then
      count_organic(tonumber(honored))
      redis.call('XADD', KEYS[2], '*', 'kind', 'call', 'id', call_id .. ':call', 'organic', '1', 'charged', honored, 'rec', record)
    else
      redis.call('XADD', KEYS[2], '*', 'kind', 'call', 'id', call_id .. ':call', 'organic', '0', 'rec', record)
    end
    out[i] = S_OK
  end
end
push_recent(keep)
if #landed > 0 then redis.call('ZREM', KEYS[3], unpack(landed)) end
write_organic(KEYS[1])
return out
