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

  Each call sends only what it has (issue 42: a key or an argument costs Redis ~1,100 instructions to
  read and hand to Lua): 2 KEYS and 3 ARGV at fixed places, all of the common call's. A call with an
  Idempotency-Key adds its record to KEYS and its index (and answer) to ARGV, after every call's own.
  KEYS[1] shard counters      {s}:stats
  KEYS[2] outbox stream       {s}:outbox
  KEYS[3] in-flight calls     {s}:inflight
  for the i-th call of the n (i from 1), at KEYS[3 + 2(i-1) + j]:
    j = 1  recent calls list   {s}:calls:<acct>
    j = 2  call record         {s}:call:<call_id>
  then, for the q-th call with an Idempotency-Key, at KEYS[3 + 2n + q]:
           its idempotency record  {s}:idem:<acct>:<agent|_owner>:<key>

  ARGV[1] how many recent calls a list keeps (it may hold up to 32 more, trimmed in steps)
  ARGV[2] seconds the call record is kept from now on: filed, it only guards against a resent
          script (the debit gave it two days, for a refund that may still come)
  ARGV[3] n, the calls of the batch
  for the i-th call, at ARGV[3 + 3(i-1) + j]:
    j = 1  call record, JSON
    j = 2  its in-flight member `<acct>|<call_id>` (the call id is what follows the first '|')
    j = 3  the credits the call kept when it counts as organic (succeeded, not refunded), else ''
  then, for each call with an Idempotency-Key in the order of their KEYS, from ARGV[4 + 3n]:
           i, and the answer to store for replay (JSON); or -i alone to free the key

  The outbox gets one entry a batch: a lone filed call its plain one (kind `call`, id `<call_id>:call`,
  organic 0|1, charged when organic, rec), several one `packed_calls` entry whose field `c` holds a
  line per call, `<call_id>|<charged when organic, else ''>|<record>`, joined by '\n' in filing
  order; src/write-behind/outbox.ts reads it back as those calls' plain entries.

  Returns one status per call, in order: {OK | ALREADY_APPLIED, ...}
]]

--@include status
-- The TTL goes to EXPIRE as given: a Lua number would be formatted anew for every call.
local keep, settled_ttl, n = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local nkeys, nargs = #KEYS, #ARGV
local function malformed() return redis.error_reply('record-calls: ' .. nkeys .. ' keys, ' .. nargs .. ' args') end
if not n or n < 0 or n ~= math.floor(n) or nkeys < 3 + 2 * n or nargs < 3 + 3 * n then return malformed() end

-- The calls with an Idempotency-Key, by index: the KEYS place of the key's record, and the ARGV place
-- of the answer to store (false: the key is freed). Read, and checked, before the first write.
local idem_key, idem_answer = {}, {}
local q, a = 3 + 2 * n, 3 + 3 * n
while a < nargs do
  local i = tonumber(ARGV[a + 1])
  local store = i and i > 0
  if store then a = a + 2 else i, a = i and -i, a + 1 end
  if not i or i < 1 or i > n or i ~= math.floor(i) or idem_key[i] or a > nargs or q >= nkeys then return malformed() end
  q = q + 1
  idem_key[i], idem_answer[i] = q, store and a
end
if q ~= nkeys then return malformed() end

-- Readers take the newest `keep` (LRANGE 0..n-1); the few older ones past it go at the next trim.
--@include recent-calls
local find, sub = string.find, string.sub
local out = {}
-- The in-flight members of the calls filed, taken out by one ZREM after the loop (one command, not n).
local landed = {}
-- The lists of a busy account the batch files several calls of (true), each of the rest false
-- (lib/recent-calls.lua): a list of one call is pushed as it goes, the tables costing more than they save.
local shared = {}
-- The filed calls' lines of the outbox entry: call id, '|', honored, '|', record, '\n' each.
local packed = {}
for i = 1, n do
  local list = KEYS[2 + 2 * i]
  shared[list] = shared[list] ~= nil
end

-- Every redis.call costs ~1-2 µs of Redis' one thread on each paid call (issue 17): the call hash is
-- read and written once, and a list is trimmed in steps of RECENT_SLACK (lib/recent-calls.lua) rather than on every push.
for i = 1, n do
  local k, a = 2 + 2 * i, 3 * i
  local list, call_key = KEYS[k], KEYS[k + 1]
  -- `honored` stays the string it came as: the XADD takes it as given, and only the counters parse it
  -- (a tonumber is a strtod, a Lua number passed to a command a printf).
  local record, member, honored = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  -- The claim, one write where HMGET + HSET were: HSET answers the fields it added, 1 (`recorded`)
  -- the first time, 0 once filed. `filed` closes the call whether it kept its charge or was refunded
  -- before (refund.lua and settle.lua apply only to a 'debited' one; the record filed says which).
  if redis.call('HSET', call_key, 'recorded', '1', 'state', 'filed') == 0 then
    out[i] = S_ALREADY_APPLIED
  else
    redis.call('EXPIRE', call_key, settled_ttl)
    landed[#landed + 1] = member
    file_recent(list, record, shared[list], keep)
    local idem = idem_key[i]
    if idem then
      local answer = idem_answer[i]
      if answer then
        redis.call('HSET', KEYS[idem], 'state', 'done', 'response', ARGV[answer])
        redis.call('EXPIRE', KEYS[idem], '86400')
      else
        -- A refunded call keeps nothing: the same key may be retried and will be charged then.
        redis.call('DEL', KEYS[idem])
      end
    end
    if honored ~= '' then count_organic(tonumber(honored)) end
    -- The call's line of the batch's one outbox entry, as parts joined once after the loop.
    local p = #packed
    packed[p + 1], packed[p + 2], packed[p + 3], packed[p + 4], packed[p + 5], packed[p + 6] =
      sub(member, find(member, '|', 1, true) + 1), '|', honored, '|', record, '\n'
    out[i] = S_OK
  end
end
push_recent(keep)
-- One XADD for the batch (issue 42: each cost Redis ~6,000 instructions a call), its calls' lines
-- joined by '\n' (a record is JSON.stringify's, which never writes a raw newline). A lone call keeps
-- the plain entry. `organic` and `charged` (an organic call's) ride beside the record either way: the
-- flusher's metrics read them without parsing it.
local filed = #packed / 6
if filed == 1 then
  if packed[3] ~= '' then
    redis.call('XADD', KEYS[2], '*', 'kind', 'call', 'id', packed[1] .. ':call', 'organic', '1', 'charged', packed[3], 'rec', packed[5])
  else
    redis.call('XADD', KEYS[2], '*', 'kind', 'call', 'id', packed[1] .. ':call', 'organic', '0', 'rec', packed[5])
  end
elseif filed > 1 then
  packed[#packed] = nil
  redis.call('XADD', KEYS[2], '*', 'kind', 'packed_calls', 'c', table.concat(packed))
end
if #landed > 0 then redis.call('ZREM', KEYS[3], unpack(landed)) end
write_organic(KEYS[1])
return out
