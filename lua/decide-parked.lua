--[[
  keys: 5
  decide-parked.lua: the founder's decision on a parked card payment.
  - 'approve': credit it. The founder's review overrides the balance cap — that is what parking
    is for. The ledger entry names the charge, like any other top-up. A refund or dispute that
    came while it was parked (reverse-charge.lua recorded it) is deducted: only the rest is credited,
    the entry's `uncredited` (reason `reversed`) says what was left out.
  - 'claim':   parked → rejecting, before the refund is asked of the processor, so an approval
    cannot race the refund. Also refund_unknown → rejecting: a refund asked again; and rejecting →
    rejecting once the claim is CLAIM_LEASE_MS old: its rejection was cut off (the instance died
    mid-refund), and asking again with the same idempotency key is the same refund, never a second.
  - 'unknown': rejecting → refund_unknown, when the processor did not answer (the refund may have
    been made): never back to `parked`, where an approval would credit it on top of the refund;
    only a new rejection (the same idempotency key: the same refund) moves it on.
  - 'reject':  rejecting → rejected, once the refund succeeded.
  - 'unclaim': rejecting → parked, when the processor refused the refund (the founder may try again).

  KEYS[1] parked payment          {s}:parked:<parked_id>
  KEYS[2] parked queue            {s}:parkedq
  KEYS[3] account hash            {s}:acct:<acct>   (the parked payment's account)
  KEYS[4] outbox stream           {s}:outbox
  KEYS[5] reversal record         {s}:reversal:<acct>:<charge_id>   (the parked payment's charge; read only)

  ARGV[1] now, epoch ms (app clock)
  ARGV[2] parked id
  ARGV[3] op: 'approve' | 'claim' | 'reject' | 'unclaim' | 'unknown'
  ARGV[4] the parked payment's charge id (read by the caller, checked here for an approval)

  Returns {OK, balance (approve; else 0), credits (approve: those credited, net of reversals), charge_id} | {NOT_FOUND} | {WRONG_STATE, state}
]]

--@include status

--@include posted-balance
local now, id, op = ARGV[1], ARGV[2], ARGV[3]

local p = redis.call('HMGET', KEYS[1], 'state', 'acct', 'charge', 'credits', 'kind', 'gateway')
if not p[1] then return {S_NOT_FOUND} end
local state, acct, charge, credits = p[1], p[2], p[3], tonumber(p[4])

local from = { approve = {parked = true}, claim = {parked = true, refund_unknown = true}, reject = {rejecting = true},
  unclaim = {rejecting = true}, unknown = {rejecting = true} }
local to = { approve = 'approved', claim = 'rejecting', reject = 'rejected', unclaim = 'parked', unknown = 'refund_unknown' }
if not from[op] then return redis.error_reply('decide-parked: unknown op ' .. tostring(op)) end
-- A claim this old outlived every refund request (three tries of 20 s): its rejection is gone.
local CLAIM_LEASE_MS = 300000
local stale = op == 'claim' and state == 'rejecting'
  and tonumber(now) - tonumber(redis.call('HGET', KEYS[1], 'decided_at') or '0') >= CLAIM_LEASE_MS
if not from[op][state] and not stale then return {S_WRONG_STATE, state} end
if op == 'approve' and redis.call('EXISTS', KEYS[3]) == 0 then return {S_NOT_FOUND} end
if op == 'approve' and ARGV[4] ~= charge then return redis.error_reply('decide-parked: charge ' .. tostring(ARGV[4]) .. ' is not the parked payment\'s') end

redis.call('HSET', KEYS[1], 'state', to[op], 'decided_at', now)
local balance = 0
local net = credits
if op == 'approve' then
  local rv = redis.call('HMGET', KEYS[5], 'refund', 'dispute')
  local reversed = math.min(credits, tonumber(rv[1] or '0') + tonumber(rv[2] or '0'))
  net = credits - reversed
  balance = redis.call('HINCRBY', KEYS[3], 'balance', net)
  local entry = {'kind', 'topup', 'id', charge .. ':topup', 'acct', acct, 'agent', '',
    'amount', net, 'bal', posted_balance(KEYS[3], balance), 'ref', charge, 'target', p[5], 'at', now}
  if reversed > 0 then
    for _, v in ipairs({'uncredited', reversed, 'reason', 'reversed'}) do entry[#entry + 1] = v end
  end
  redis.call('XADD', KEYS[4], '*', unpack(entry))
end
if op == 'approve' or op == 'reject' then redis.call('ZREM', KEYS[2], id) end
-- refund_unknown is written through too: a rebuild from Postgres must not bring such a payment
-- back as `parked`, where an approval would credit it on top of a refund that may have been made.
if op == 'approve' or op == 'reject' or op == 'unknown' then
  redis.call('XADD', KEYS[4], '*', 'kind', 'parked', 'id', id .. ':' .. to[op], 'pid', id, 'acct', acct,
    'charge', charge, 'credits', credits, 'pkind', p[5], 'gateway', p[6], 'state', to[op], 'at', now)
end
return {S_OK, balance, net, charge}
