--[[
  refund-7: give back the debit of one call whose provider failed. Keyed by the call record, so a
  refund applies at most once however often it is retried. The refunded call stops counting against
  the day's caps. The refund is a new ledger entry naming the debit it corrects.

  KEYS[1] account hash                {s}:acct:<acct>
  KEYS[2] call record                 {s}:call:<call_id>
  KEYS[3] account spend of the call's HKT day
  KEYS[4] agent spend of the call's HKT day
  KEYS[5] unpriced requests of the call's HKT day
  KEYS[6] outbox stream               {s}:outbox
  KEYS[7] in-flight calls of the shard {s}:inflight

  ARGV[1] now, epoch ms
  ARGV[2] call id
  ARGV[3] account id
  ARGV[4] reason (provider_5xx, timeout, network, too_large, ...)
  ARGV[5] '' for a refund of the request's own failure; for the sweeper's refund of a cut-off call,
          the "now" it swept at: the call is refunded only if its in-flight deadline is still at or
          before it, so a lease renewed since the sweep read the set (src/ledger/leases.ts) wins

  Returns {OK, balance_after, amount} | {ALREADY_APPLIED, balance} | {NOT_FOUND, 0} | {NOT_DUE, 0}
]]

--@include status

local now = ARGV[1]
local call_id = ARGV[2]

local call = redis.call('HMGET', KEYS[2], 'state', 'price', 'agent', 'unpriced', 'target')
if not call[1] then return {S_NOT_FOUND, 0} end
if call[1] ~= 'debited' then
  return {S_ALREADY_APPLIED, tonumber(redis.call('HGET', KEYS[1], 'balance') or '0')}
end
if ARGV[5] and ARGV[5] ~= '' then
  local deadline = redis.call('ZSCORE', KEYS[7], ARGV[3] .. '|' .. call_id)
  if deadline and tonumber(deadline) > tonumber(ARGV[5]) then return {S_NOT_DUE, 0} end
end
local price = tonumber(call[2])

redis.call('HSET', KEYS[2], 'state', 'refunded')
redis.call('ZREM', KEYS[7], ARGV[3] .. '|' .. call_id)
local balance = redis.call('HINCRBY', KEYS[1], 'balance', price)
-- Only touch day counters that still exist: a refund after midnight must not create a key
-- without expiry for a day that is over.
if price > 0 then
  if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('DECRBY', KEYS[3], price) end
  if call[3] ~= '' and redis.call('EXISTS', KEYS[4]) == 1 then redis.call('DECRBY', KEYS[4], price) end
end
if call[4] == '1' and redis.call('EXISTS', KEYS[5]) == 1 then redis.call('DECR', KEYS[5]) end
redis.call('XADD', KEYS[6], '*', 'kind', 'refund', 'id', call_id .. ':refund', 'acct', ARGV[3],
  'agent', call[3], 'amount', price, 'bal', balance, 'call', call_id, 'ref', call_id .. ':debit',
  'target', call[5], 'reason', ARGV[4], 'at', now)
return {S_OK, balance, price}
