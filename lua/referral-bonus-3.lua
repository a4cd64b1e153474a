--[[
  referral-bonus-3: after the referred account's first successful call, credit both sides once.
  Claiming the pending referral (HDEL) is the exactly-once guard: concurrent first calls race on
  it and only one wins. Both accounts share the shard, so both credits and both entries are atomic.

  KEYS[1] referred account hash  {s}:acct:<acct>
  KEYS[2] referrer account hash  {s}:acct:<referrer>
  KEYS[3] outbox stream          {s}:outbox

  ARGV[1] now, epoch ms
  ARGV[2] referred account id
  ARGV[3] bonus, credits (each side)
  ARGV[4] the call id that earned it

  Returns {OK, referred_balance} | {ALREADY_APPLIED, 0}
]]

--@include status
local now, acct, bonus = ARGV[1], ARGV[2], tonumber(ARGV[3])

local referrer = redis.call('HGET', KEYS[1], 'referrer')
if not referrer then return {S_ALREADY_APPLIED, 0} end
redis.call('HDEL', KEYS[1], 'referrer')

local b1 = redis.call('HINCRBY', KEYS[1], 'balance', bonus)
redis.call('XADD', KEYS[3], '*', 'kind', 'referral', 'id', acct .. ':referral:referred', 'acct', acct,
  'agent', '', 'amount', bonus, 'bal', b1, 'call', ARGV[4], 'at', now)
if redis.call('EXISTS', KEYS[2]) == 1 then
  local b2 = redis.call('HINCRBY', KEYS[2], 'balance', bonus)
  redis.call('XADD', KEYS[3], '*', 'kind', 'referral', 'id', acct .. ':referral:referrer', 'acct', referrer,
    'agent', '', 'amount', bonus, 'bal', b2, 'call', ARGV[4], 'at', now)
end
return {S_OK, b1}
