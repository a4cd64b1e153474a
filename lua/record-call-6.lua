--[[
  record-call-6: file the outcome of a finished call (metadata only, never payloads): the account's
  recent-calls list for /v1/activity, the outbox (so Postgres keeps it), the shard's public
  counters, and the stored answer of an Idempotency-Key. Not a money decision: the money moved in
  debit/refund already. A call that kept its charge is marked settled here, so a stray late refund
  of it can never apply. A call is recorded once: a resent script (lost reply) or a sweeper racing
  the request's own record changes nothing the second time.

  KEYS[1] recent calls list   {s}:calls:<acct>
  KEYS[2] shard counters      {s}:stats
  KEYS[3] idempotency record  {s}:idem:<acct>:<key>  (never written without a key)
  KEYS[4] outbox stream       {s}:outbox
  KEYS[5] call record         {s}:call:<call_id>
  KEYS[6] in-flight calls     {s}:inflight

  ARGV[1] call record, JSON
  ARGV[2] call id
  ARGV[3] credits kept by the call (0 when refunded)
  ARGV[4] '1' when the call counts as organic (succeeded, not refunded)
  ARGV[5] '' without a key; 'store' to keep the answer for replay; 'release' to free the key
  ARGV[6] the answer to replay, JSON (with 'store')
  ARGV[7] how many recent calls the list keeps (it may hold up to 32 more, trimmed in steps)
  ARGV[8] account id
  ARGV[9] seconds the call record is kept from now on: filed, it only guards against a resent
          script (the debit gave it two days, for a refund that may still come)

  Returns {OK} | {ALREADY_APPLIED}
]]

--@include status
local record, call_id, charged = ARGV[1], ARGV[2], tonumber(ARGV[3])

-- Every redis.call costs ~1-2 µs of Redis' one thread on each paid call (issue 17): the call hash is
-- read and written once, and the list is trimmed in steps of TRIM_SLACK rather than on every push.
local call = redis.call('HMGET', KEYS[5], 'recorded', 'state')
if call[1] == '1' then return {S_ALREADY_APPLIED} end
-- Refunds run before the record is filed, so a call still 'debited' here kept its charge.
if call[2] == 'debited' then
  redis.call('HSET', KEYS[5], 'recorded', '1', 'state', 'settled')
else
  redis.call('HSET', KEYS[5], 'recorded', '1')
end
redis.call('EXPIRE', KEYS[5], tonumber(ARGV[9]))
redis.call('ZREM', KEYS[6], ARGV[8] .. '|' .. call_id)

-- Readers take the newest ARGV[7] (LRANGE 0..n-1); the few older ones past it go at the next trim.
local TRIM_SLACK = 32
local keep = tonumber(ARGV[7])
if redis.call('LPUSH', KEYS[1], record) > keep + TRIM_SLACK then redis.call('LTRIM', KEYS[1], 0, keep - 1) end
if ARGV[4] == '1' then
  redis.call('HINCRBY', KEYS[2], 'organic_calls_routed', 1)
  redis.call('HINCRBY', KEYS[2], 'credits_honored', charged)
end
if ARGV[5] == 'store' then
  redis.call('HSET', KEYS[3], 'state', 'done', 'response', ARGV[6])
  redis.call('EXPIRE', KEYS[3], 86400)
elseif ARGV[5] == 'release' then
  -- A refunded call keeps nothing: the same key may be retried and will be charged then.
  redis.call('DEL', KEYS[3])
end
-- `organic` and `charged` beside the record: the flusher's metrics read them without parsing it.
redis.call('XADD', KEYS[4], '*', 'kind', 'call', 'id', call_id .. ':call', 'organic', ARGV[4], 'charged', charged, 'rec', record)
return {S_OK}
