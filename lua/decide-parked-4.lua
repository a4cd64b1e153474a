--[[
  decide-parked-4: the founder's decision on a parked card payment.
  - 'approve': credit it. The founder's review overrides the balance cap — that is what parking
    is for. The ledger entry names the charge, like any other top-up.
  - 'claim':   parked → rejecting, before the refund is asked of the processor, so an approval
    cannot race the refund.
  - 'reject':  rejecting → rejected, once the refund succeeded.
  - 'unclaim': rejecting → parked, when the refund failed (the founder may try again).

  KEYS[1] parked payment          {s}:parked:<parked_id>
  KEYS[2] parked queue            {s}:parkedq
  KEYS[3] account hash            {s}:acct:<acct>   (the parked payment's account)
  KEYS[4] outbox stream           {s}:outbox

  ARGV[1] now, epoch ms (app clock)
  ARGV[2] parked id
  ARGV[3] op: 'approve' | 'claim' | 'reject' | 'unclaim'

  Returns {OK, balance (approve; else 0), credits, charge_id} | {NOT_FOUND} | {WRONG_STATE, state}
]]

--@include status

--@include posted-balance
local now, id, op = ARGV[1], ARGV[2], ARGV[3]

local p = redis.call('HMGET', KEYS[1], 'state', 'acct', 'charge', 'credits', 'kind', 'gateway')
if not p[1] then return {S_NOT_FOUND} end
local state, acct, charge, credits = p[1], p[2], p[3], tonumber(p[4])

local from = { approve = 'parked', claim = 'parked', reject = 'rejecting', unclaim = 'rejecting' }
local to = { approve = 'approved', claim = 'rejecting', reject = 'rejected', unclaim = 'parked' }
if not from[op] then return redis.error_reply('decide-parked: unknown op ' .. tostring(op)) end
if state ~= from[op] then return {S_WRONG_STATE, state} end
if op == 'approve' and redis.call('EXISTS', KEYS[3]) == 0 then return {S_NOT_FOUND} end

redis.call('HSET', KEYS[1], 'state', to[op], 'decided_at', now)
local balance = 0
if op == 'approve' then
  balance = redis.call('HINCRBY', KEYS[3], 'balance', credits)
  redis.call('XADD', KEYS[4], '*', 'kind', 'topup', 'id', charge .. ':topup', 'acct', acct, 'agent', '',
    'amount', credits, 'bal', posted_balance(KEYS[3], balance), 'ref', charge, 'target', p[5], 'at', now)
end
if op == 'approve' or op == 'reject' then redis.call('ZREM', KEYS[2], id) end
if op ~= 'claim' and op ~= 'unclaim' then
  redis.call('XADD', KEYS[4], '*', 'kind', 'parked', 'id', id .. ':' .. to[op], 'pid', id, 'acct', acct,
    'charge', charge, 'credits', credits, 'pkind', p[5], 'gateway', p[6], 'state', to[op], 'at', now)
end
return {S_OK, balance, credits, charge}
