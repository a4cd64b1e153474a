--[[
  keys: 7
  reverse-charge.lua: a card charge we credited was refunded at the processor (its dashboard, or our
  own refund) or disputed by the card holder: the credits of the money that went back are taken
  back, exactly once per reversed amount. The processor reports a refund as the charge's
  cumulative refunded amount and a dispute as its disputed amount, so the reversal record keeps,
  per cause, the credits already accounted for (taken or unrecovered): each event takes only the
  difference, and a replayed or out-of-order event takes nothing.
  Credits of the reversed amount: the charge's own rate, credits credited × cents / charge cents
  (rounded down), refunds and disputes together never past the credits credited.
  Only the spendable `balance` is taken, never below 0 and never the `held` credits of metered
  calls in flight (lua/debit.lua); what cannot be taken is recorded as `uncredited` (reason
  `unrecovered`) on the entry, not chased later.
  A dispute also disables the mandate and forgets its card here (as an authentication_required
  refill does, release-refill.lua): the card holder disputed a payment to us, so no card of the
  account is charged again without a new consent.
  Which credits were credited for the charge: the charge record's (credit-topup.lua keeps them for
  90 days), else the top-up entry Postgres holds (ARGV[7], read by the caller, its `amount` plus
  its `uncredited`), else the charge was not credited here.
  Not credited YET — the processor does not order its events, and retries for days a delivery we
  refused, so a refund or dispute can come before the event that credits its charge — the reversal
  is recorded all the same, reckoned in the credits the charge pays for (ARGV[9], the
  PaymentIntent's metadata; a parked charge's parked credits): the reversal record moves to the
  new target with nothing taken, and a `reversal` entry of amount 0 (`uncredited` the credits,
  reason `before_credit`) carries it to Postgres, whence `ledger:rebuild` restores the record.
  credit-topup.lua and decide-parked.lua read the record and credit only what was not reversed.
  A parked charge (credit-topup.lua parked it past the balance cap; the founder decides it,
  decide-parked.lua): approved, it was credited — its parked credits are the charge's. Still parked
  (or refund_unknown), it is not credited yet: recorded as above, and an approval credits the rest.
  Once reversed in full it can no longer be approved (nothing is left to credit) nor needs our
  refund, so it becomes `reversed`, leaves the founder's queue and is written through like any
  decision. Rejected (our own refund) or reversed before: nothing to record.
  The entry and the owner's `payment.reversed` event ride the same outbox; ids fixed by the charge,
  the cause and the cumulative credits, so a redelivered stream entry is a no-op.

  KEYS[1] account hash      {s}:acct:<acct>
  KEYS[2] mandate hash      {s}:mandate:<acct>
  KEYS[3] charge record     {s}:charge:<acct>:<charge_id>   (read only)
  KEYS[4] reversal record   {s}:reversal:<acct>:<charge_id>
  KEYS[5] outbox stream     {s}:outbox
  KEYS[6] parked payment    {s}:parked:<parked_id>   (the charge record's `parked`; else KEYS[3] again, unread)
  KEYS[7] parked queue      {s}:parkedq

  ARGV[1] now, epoch ms (app clock)
  ARGV[2] account id
  ARGV[3] charge id (the one credit-topup-7 credited: Stripe's PaymentIntent id)
  ARGV[4] cause: 'refund' | 'dispute'
  ARGV[5] reversed cents: the cumulative refunded amount (refund), the disputed amount (dispute)
  ARGV[6] the charge's amount, cents
  ARGV[7] credits of the charge's top-up entry in Postgres; '' when it has none
  ARGV[8] the parked id the charge record names (read by the caller, checked here); '' for none
  ARGV[9] the credits the charge pays for (the PaymentIntent's metadata); '' when unknown

  Returns {OK, balance, taken, unrecovered, mandate_disabled 0|1}
        | {ALREADY_APPLIED, balance, mandate_disabled} (nothing more is owed for this amount)
        | {RECORDED, mandate_disabled, parked_reversed 0|1} (not credited yet: recorded for the
          credit to deduct; parked_reversed: it was parked, is reversed in full, and is now `reversed`)
        | {NOT_CREDITED, mandate_disabled} (the charge was not credited here and never will be:
          a rejected or reversed parked payment, or no credits known)
        | {CREDITS_UNKNOWN} (credited, but its credits are not known yet: the top-up entry has
          not reached Postgres; nothing written, ask again later)
        | {NOT_FOUND} (no such account)
]]

--@include mandate-off

--@include status
local now, acct, charge, cause = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local cents, amount = tonumber(ARGV[5]), tonumber(ARGV[6])
if ARGV[9] ~= '' and not (tonumber(ARGV[9]) and tonumber(ARGV[9]) > 0) then return redis.error_reply('reverse-charge: bad credits') end

local a = redis.call('HMGET', KEYS[1], 'balance', 'held')
if not a[1] then return {S_NOT_FOUND} end
if cause ~= 'refund' and cause ~= 'dispute' then return redis.error_reply('reverse-charge: unknown cause ' .. tostring(cause)) end
if not cents or cents < 0 or not amount or amount <= 0 then return redis.error_reply('reverse-charge: bad amounts') end

-- The credits the charge was credited with: the record's (fresh), else the durable ledger's; or,
-- not credited yet (`pending`), the credits its credit will be reckoned from.
local rec = redis.call('HMGET', KEYS[3], 'state', 'credits', 'parked')
if (rec[3] or '') ~= ARGV[8] then return redis.error_reply('reverse-charge: parked id ' .. ARGV[8] .. ' is not the charge\'s') end
local parked = rec[1] == 'parked' and rec[3] and redis.call('HMGET', KEYS[6], 'state', 'credits', 'kind', 'gateway') or nil
local awaiting = parked and (parked[1] == 'parked' or parked[1] == 'refund_unknown')
local credits, pending = nil, false
if rec[1] == 'credited' and rec[2] then
  credits = tonumber(rec[2])
elseif parked and parked[1] == 'approved' then
  credits = tonumber(parked[2])
elseif ARGV[7] ~= '' then
  credits = tonumber(ARGV[7])
elseif rec[1] == 'credited' then
  -- Credited before the record kept its credits, and the entry is not in Postgres yet.
  return {S_CREDITS_UNKNOWN}
elseif awaiting then
  credits, pending = tonumber(parked[2]), true
elseif not rec[1] and ARGV[9] ~= '' then
  credits, pending = tonumber(ARGV[9]), true
end

-- Checked; writes from here on.
local disabled = 0
if cause == 'dispute' then
  local m = redis.call('HMGET', KEYS[2], 'enabled', 'pm')
  if m[1] == '1' or m[2] then
    disabled = 1
    -- A consent started before the dispute does not complete either.
    redis.call('HDEL', KEYS[2], 'consent_id', 'consent_started')
    mandate_off(KEYS[2], KEYS[1], KEYS[5], acct, now, 'card_disputed')
  end
end
if not credits then return {S_NOT_CREDITED, disabled} end

local balance, held = tonumber(a[1]), tonumber(a[2] or '0')
local r = redis.call('HMGET', KEYS[4], 'refund', 'dispute')
local done = {refund = tonumber(r[1] or '0'), dispute = tonumber(r[2] or '0')}
local other = cause == 'refund' and done.dispute or done.refund

if cents > amount then cents = amount end
local target = math.floor(credits * cents / amount)
if target > credits - other then target = credits - other end
local owed = target - done[cause]
if owed <= 0 then
  if pending then return {S_RECORDED, disabled, 0} end
  return {S_ALREADY_APPLIED, balance, disabled}
end
redis.call('HSET', KEYS[4], cause, target, 'at', now)

if pending then
  -- Nothing credited, nothing taken: the credit to come deducts it. `bal` is the posted balance.
  redis.call('XADD', KEYS[5], '*', 'kind', 'reversal', 'id', charge .. ':reversal:' .. cause .. ':' .. target, 'acct', acct,
    'agent', '', 'amount', 0, 'bal', balance + held, 'ref', charge, 'target', cause, 'uncredited', owed,
    'reason', 'before_credit', 'at', now)
  local cancelled = 0
  if awaiting and target + other >= credits then
    cancelled = 1
    redis.call('HSET', KEYS[6], 'state', 'reversed', 'decided_at', now)
    redis.call('ZREM', KEYS[7], ARGV[8])
    redis.call('XADD', KEYS[5], '*', 'kind', 'parked', 'id', ARGV[8] .. ':reversed', 'pid', ARGV[8], 'acct', acct,
      'charge', charge, 'credits', parked[2], 'pkind', parked[3], 'gateway', parked[4], 'state', 'reversed', 'at', now)
  end
  return {S_RECORDED, disabled, cancelled}
end

local taken = owed
if taken > balance then taken = math.max(balance, 0) end
local unrecovered = owed - taken
if taken > 0 then balance = redis.call('HINCRBY', KEYS[1], 'balance', -taken) end
-- `bal` is the posted balance (balance + held), as on every entry (lua/debit.lua).
local entry = {'kind', 'reversal', 'id', charge .. ':reversal:' .. cause .. ':' .. target, 'acct', acct, 'agent', '',
  'amount', -taken, 'bal', balance + held, 'ref', charge, 'target', cause, 'at', now}
if unrecovered > 0 then
  for _, v in ipairs({'uncredited', unrecovered, 'reason', 'unrecovered'}) do entry[#entry + 1] = v end
end
redis.call('XADD', KEYS[5], '*', unpack(entry))
redis.call('XADD', KEYS[5], '*', 'kind', 'event', 'id', 'evt_' .. charge .. '_reversed_' .. cause .. '_' .. target, 'acct', acct,
  'type', 'payment.reversed', 'at', now, 'data', cjson.encode({charge_id = charge, cause = cause, credits = owed,
    taken = taken, unrecovered = unrecovered, balance = balance, reversed_cents = cents, mandate_disabled = disabled == 1}))
return {S_OK, balance, taken, unrecovered, disabled}
