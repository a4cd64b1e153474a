--[[
  keys: n (a batch: each call's KEYS follow its shard's; the count is sent with the call)
  record-calls.lua: file the outcomes of finished calls (metadata only, never payloads), a batch in
  one script: each call's account's recent-calls list for /v1/activity, the outbox of its shard (so
  Postgres keeps it), the shard's public counters, and the stored answer of an Idempotency-Key. Not
  a money decision: the money moved in debit/refund already. A filed call's record is marked
  `filed` (kept its charge or refunded before), so a stray late refund of it can never apply. A
  call is recorded once: a resent script (lost reply), a sweeper racing the request's own record,
  or the same call twice in one batch changes nothing the second time.
  Why a batch (issue 17): every settled call used to cost one EVALSHA of its own — a command for
  ioredis to build, write and parse, and one script start in Redis. The app gathers the calls settled
  in one turn of its event loop (src/paid-request/call-filing.ts) and files them together: on a
  Cluster one shard's (every key of a script in one hash slot), on a single Redis every shard's, as
  one group of calls per shard (issue 42: a fleet's turn settles about one call per shard, and a
  script of one call cost ~94,000 instructions a call against ~59,000 in a batch of 16).

  Each call sends only what it has (issue 42: a key or an argument costs Redis ~1,100 instructions to
  read and hand to Lua): 2 KEYS and 3 ARGV at fixed places, all of the common call's. A call with an
  Idempotency-Key adds its record to KEYS and its index (and answer) to ARGV, after every call's own.
  The calls are numbered i = 1..n across the groups, in order (n the sum of the groups' sizes m_g).
  KEYS come group by group (g = 1..G), each its shard's three, then its m_g calls' two each. The first
  group's:
  KEYS[1] shard counters      {s}:stats
  KEYS[2] outbox stream       {s}:outbox
  KEYS[3] in-flight calls     {s}:inflight
  for its j-th call (j from 1), at KEYS[3 + 2(j-1) + c]:
    c = 1  recent calls list   {s}:calls:<acct>
    c = 2  call record         {s}:call:<call_id>
  and the g-th group's the same, past the 3(g-1) + 2(m_1 + ... + m_(g-1)) keys of the groups before it.
  then, for the q-th call with an Idempotency-Key, at KEYS[3G + 2n + q]:
           its idempotency record  {s}:idem:<acct>:<agent|_owner>:<key>

  ARGV[1] how many recent calls a list keeps (it may hold up to 32 more, trimmed in steps)
  ARGV[2] seconds the call record is kept from now on: filed, it only guards against a resent
          script (the debit gave it two days, for a refund that may still come)
  ARGV[3] G, the groups (shards) of the batch
  ARGV[3 + g] m_g, the calls of the g-th group
  for the i-th call, at ARGV[3 + G + 3(i-1) + j]:
    j = 1  call record, JSON
    j = 2  its in-flight member `<acct>|<call_id>` (the call id is what follows the first '|')
    j = 3  the credits the call kept when it counts as organic (succeeded, not refunded), else ''
  then, for each call with an Idempotency-Key in the order of their KEYS, from ARGV[4 + G + 3n]:
           i, and the answer to store for replay (JSON); or -i alone to free the key

  Each group's outbox gets one entry: a lone filed call its plain one (kind `call`, id
  `<call_id>:call`, organic 0|1, charged when organic, rec), several one `filed_calls` entry whose
  field `c` holds a line per call, `<acct>|<call_id>|<charged when organic, else ''>|<record>` (its
  in-flight member first, as it came: cutting the call id out of it cost ~1,000 instructions a call),
  joined by '\n' in filing order; src/write-behind/outbox.ts reads it back as those calls' plain
  entries.

  Returns one status per call, i = 1..n: {OK | ALREADY_APPLIED, ...}
]]

--@include status
-- The TTL goes to EXPIRE as given: a Lua number would be formatted anew for every call.
local keep, settled_ttl, groups = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local nkeys, nargs = #KEYS, #ARGV
local floor = math.floor
local function malformed() return redis.error_reply('record-calls: ' .. nkeys .. ' keys, ' .. nargs .. ' args') end
if not groups or groups < 0 or groups ~= floor(groups) or nargs < 3 + groups then return malformed() end
local sizes, n = {}, 0
for g = 1, groups do
  local m = tonumber(ARGV[3 + g])
  if not m or m < 0 or m ~= floor(m) then return malformed() end
  sizes[g], n = m, n + m
end
if nkeys < 3 * groups + 2 * n or nargs < 3 + groups + 3 * n then return malformed() end

-- The calls with an Idempotency-Key, by index: the KEYS place of the key's record, and the ARGV place
-- of the answer to store (false: the key is freed). Read, and checked, before the first write.
local idem_key, idem_answer = {}, {}
local q, a = 3 * groups + 2 * n, 3 + groups + 3 * n
while a < nargs do
  local i = tonumber(ARGV[a + 1])
  local store = i and i > 0
  if store then a = a + 2 else i, a = i and -i, a + 1 end
  if not i or i < 1 or i > n or i ~= floor(i) or idem_key[i] or a > nargs or q >= nkeys then return malformed() end
  q = q + 1
  idem_key[i], idem_answer[i] = q, store and a
end
if q ~= nkeys then return malformed() end

-- Readers take the newest `keep` (LRANGE 0..n-1); the few older ones past it go at the next trim.
--@include recent-calls
local find, sub = string.find, string.sub
local out = {}
-- The lists of a busy account the batch files several calls of (true), each of the rest false
-- (lib/recent-calls.lua): a list of one call is pushed as it goes, the tables costing more than they save.
local shared = {}
local k = 0
for g = 1, groups do
  k = k + 3
  for _ = 1, sizes[g] do
    local list = KEYS[k + 1]
    shared[list] = shared[list] ~= nil
    k = k + 2
  end
end

-- Every redis.call costs ~1-2 µs of Redis' one thread on each paid call (issue 17): the call hash is
-- read and written once, and a list is trimmed in steps of RECENT_SLACK (lib/recent-calls.lua) rather than on every push.
local i = 0
k = 0
for g = 1, groups do
  local stats, outbox, inflight = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  k = k + 3
  -- The in-flight members of the group's calls filed, taken out by one ZREM after them (one command, not m).
  local landed = {}
  -- The filed calls' lines of the group's outbox entry: in-flight member, '|', honored, '|', record, '\n' each.
  local packed = {}
  for _ = 1, sizes[g] do
    i = i + 1
    local list, call_key = KEYS[k + 1], KEYS[k + 2]
    k = k + 2
    local a = groups + 3 * i
    -- `honored` stays the string it came as: the XADD takes it as given, and only the counters parse it
    -- (a tonumber is a strtod, a Lua number passed to a command a printf).
    local record, member, honored = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
    -- The claim. The common call's record, flat or metered, is a string (debit.lua): one SET makes it
    -- the bare word `filed`, with the short TTL, and answers what it was, `filed` once filed. Any other
    -- record is a hash (the SET, refused, changes nothing): HSET answers the fields it added, 1 (`recorded`) the
    -- first time, 0 once filed. `filed` closes the call whether it kept its charge or was refunded
    -- before (refund.lua and settle.lua apply only to a 'debited' one; the record filed says which).
    -- A call with an Idempotency-Key has a hash (debit.lua) and goes there directly. (`was.err` is
    -- nil on a string: its metatable's __index is the string library.)
    local hash, was = idem_key[i] ~= nil, nil
    if not hash then
      was = redis.pcall('SET', call_key, 'filed', 'EX', settled_ttl, 'GET')
      hash = was and was.err ~= nil
    end
    if hash then
      was = redis.call('HSET', call_key, 'recorded', '1', 'state', 'filed') == 1 and 'hash' or 'filed'
      if was == 'hash' then redis.call('EXPIRE', call_key, settled_ttl) end
    end
    if was == 'filed' then
      out[i] = S_ALREADY_APPLIED
    else
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
      local p = #packed
      packed[p + 1], packed[p + 2], packed[p + 3], packed[p + 4], packed[p + 5], packed[p + 6] =
        member, '|', honored, '|', record, '\n'
      out[i] = S_OK
    end
  end
  -- One XADD for the group (issue 42: each cost Redis ~6,000 instructions a call), its calls' lines
  -- joined by '\n' (a record is JSON.stringify's, which never writes a raw newline). A lone call keeps
  -- the plain entry. `organic` and `charged` (an organic call's) stay out of the record either way (the
  -- plain entry's own fields, a line's second value): the flusher's metrics read them without parsing it.
  local filed = #packed / 6
  if filed == 1 then
    local id = sub(packed[1], find(packed[1], '|', 1, true) + 1) .. ':call'   -- the member's call id
    if packed[3] ~= '' then
      redis.call('XADD', outbox, '*', 'kind', 'call', 'id', id, 'organic', '1', 'charged', packed[3], 'rec', packed[5])
    else
      redis.call('XADD', outbox, '*', 'kind', 'call', 'id', id, 'organic', '0', 'rec', packed[5])
    end
  elseif filed > 1 then
    packed[#packed] = nil
    redis.call('XADD', outbox, '*', 'kind', 'filed_calls', 'c', table.concat(packed))
  end
  if #landed > 0 then redis.call('ZREM', inflight, unpack(landed)) end
  -- The counters are the shard's: written, and started afresh, group by group.
  write_organic(stats)
end
push_recent(keep)
return out
