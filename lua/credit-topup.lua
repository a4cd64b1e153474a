--[[
  keys: 8
  credit-topup.lua: credit one paid card charge — an auto-refill, an agent's top-up, or a credit pack
  a human bought — exactly once and within the balance cap. The charge id is the dedupe key: the
  synchronous refill path, Stripe's webhook and every replay of it credit one charge once between
  them. A charge that would take the balance past the cap is not credited but parked for the
  founder: the money is already taken, so only a human may decide to credit or refund it.
  A refill or top-up also counts against its month's ceiling and releases the refill lock it held;
  its reservation's `pending` amount (reserve-refill.lua) becomes `refilled` — also for a charge
  whose lock lapsed long ago (its outcome was unknown until now).
  A refund or dispute of the charge may have come first (the processor does not order its events;
  reverse-charge.lua recorded it in the reversal record, per cause the credits reversed): only what
  was not reversed is credited (`net`), and it is `net` that the balance cap weighs. The top-up
  entry says what was left out (`uncredited`, reason `reversed`), and the charge record keeps the
  whole credits: the rate a later, larger reversal is reckoned at. Reversed in full: nothing to
  credit or park, the entry is of amount 0. A parked charge keeps its whole credits too:
  decide-parked.lua deducts what is reversed by the time the founder approves it.
  The owner's event rides the same outbox (src/events/): `refill.succeeded` (mode auto, topup or
  pack) when credited, `payment.parked` when parked; ids fixed by the charge id.

  KEYS[1] account hash                  {s}:acct:<acct>
  KEYS[2] mandate hash                  {s}:mandate:<acct>
  KEYS[3] refills of the charge's month {s}:refills:<acct>:<YYYY-MM>  (`refilled`, `pending`; not written for a pack)
  KEYS[4] charge record                 {s}:charge:<acct>:<charge_id>  (`state`, `parked`; `credits` when credited)
  KEYS[5] parked payment                {s}:parked:<parked_id>  (written only when parking)
  KEYS[6] parked queue of the shard     {s}:parkedq
  KEYS[7] outbox stream                 {s}:outbox
  KEYS[8] reversal record               {s}:reversal:<acct>:<charge_id>  (read only: reverse-charge.lua writes it)

  ARGV[1] now, epoch ms (app clock)
  ARGV[2] account id
  ARGV[3] charge id (the processor's: Stripe PaymentIntent id, sandbox charge id)
  ARGV[4] credits
  ARGV[5] kind: 'refill' | 'topup' | 'pack'
  ARGV[6] attempt id whose lock this charge settles; '' for a pack
  ARGV[7] parked id to use if the charge must be parked (pk_<shard>_<random>)
  ARGV[8] gateway ('sandbox' | 'stripe')
  ARGV[9] TTL of the charge record, s
  ARGV[10] TTL of the month's refills, s

  Returns {OK, balance, credits credited (net of reversals)} | {PARKED, balance, balance_cap, parked_id}
  (PARKED's balance is the posted one, balance + held: the one the cap weighs)
        | {ALREADY_APPLIED, balance (posted when parked), 'credited'|'parked', parked_id or '', balance_cap}
        | {NOT_FOUND}
]]

--@include status

local now, acct, charge = ARGV[1], ARGV[2], ARGV[3]
local credits = tonumber(ARGV[4])
local kind, attempt, parked_id = ARGV[5], ARGV[6], ARGV[7]

local a = redis.call('HMGET', KEYS[1], 'balance', 'balance_cap', 'held')
if not a[1] then return {S_NOT_FOUND} end
local balance = tonumber(a[1])
local cap = tonumber(a[2] or '0')

local seen = redis.call('HMGET', KEYS[4], 'state', 'parked')
local holds_lock = attempt ~= '' and redis.call('HGET', KEYS[2], 'pending') == attempt

-- Decided. Whatever the outcome, the attempt is settled: its lock is released.
if holds_lock then
  redis.call('HDEL', KEYS[2], 'pending', 'pending_amount', 'pending_until', 'pending_month', 'pending_mode', 'pending_day', 'pending_pm')
end
-- The outcome is known: the reservation no longer counts as pending (the credit below counts it).
local reserved = attempt ~= '' and kind ~= 'pack' and redis.call('HGET', KEYS[3], 'a:' .. attempt)
if reserved then
  redis.call('HDEL', KEYS[3], 'a:' .. attempt)
  redis.call('HINCRBY', KEYS[3], 'pending', -tonumber(reserved))
end
-- Applied before (the synchronous answer and the webhook of one charge race): answered as the first
-- application answered, so either side tells the caller the same thing — a parked charge with the
-- posted balance and the cap, as PARKED does.
if seen[1] then
  local shown = seen[1] == 'parked' and balance + tonumber(a[3] or '0') or balance
  return {S_ALREADY_APPLIED, shown, seen[1], seen[2] or '', cap}
end

-- Refunded or disputed before this credit: only the rest is the account's.
local rv = redis.call('HMGET', KEYS[8], 'refund', 'dispute')
local reversed = math.min(credits, tonumber(rv[1] or '0') + tonumber(rv[2] or '0'))
local net = credits - reversed

-- Credit or park: both count against the month's ceiling (the card was charged either way).
if kind ~= 'pack' then
  redis.call('HINCRBY', KEYS[3], 'refilled', credits)
  redis.call('HINCRBY', KEYS[3], 'count', 1)
  redis.call('EXPIRE', KEYS[3], tonumber(ARGV[10]))
end

-- The cap weighs the posted balance: what metered calls in flight hold comes back to the balance
-- unless they spend it, so a credit that fits beside the holds only could end past the cap once
-- they settle. The balance the refusal reports is that one.
local held = tonumber(a[3] or '0')
local posted = balance + held
if net > 0 and posted + net > cap then
  balance = posted
  redis.call('HSET', KEYS[5], 'acct', acct, 'charge', charge, 'credits', credits, 'kind', kind,
    'gateway', ARGV[8], 'state', 'parked', 'at', now)
  redis.call('ZADD', KEYS[6], now, parked_id)
  redis.call('HSET', KEYS[4], 'state', 'parked', 'parked', parked_id)
  redis.call('EXPIRE', KEYS[4], tonumber(ARGV[9]))
  redis.call('XADD', KEYS[7], '*', 'kind', 'parked', 'id', parked_id .. ':parked', 'pid', parked_id,
    'acct', acct, 'charge', charge, 'credits', credits, 'pkind', kind, 'gateway', ARGV[8],
    'state', 'parked', 'at', now)
  redis.call('XADD', KEYS[7], '*', 'kind', 'event', 'id', 'evt_' .. charge .. '_parked', 'acct', acct,
    'type', 'payment.parked', 'at', now, 'data', cjson.encode({parked_id = parked_id, credits = credits,
      balance = balance, balance_cap = cap, charge_id = charge}))
  return {S_PARKED, balance, cap, parked_id}
end

balance = redis.call('HINCRBY', KEYS[1], 'balance', net)
-- `credits`: the whole charge's, the rate a later refund or dispute is reckoned at (reverse-charge.lua).
redis.call('HSET', KEYS[4], 'state', 'credited', 'credits', credits)
redis.call('EXPIRE', KEYS[4], tonumber(ARGV[9]))
-- `bal` is the posted balance: balance + what metered calls in flight hold (lua/debit.lua).
local entry = {'kind', 'topup', 'id', charge .. ':topup', 'acct', acct, 'agent', '',
  'amount', net, 'bal', balance + held, 'ref', charge, 'target', kind, 'at', now}
if reversed > 0 then
  for _, v in ipairs({'uncredited', reversed, 'reason', 'reversed'}) do entry[#entry + 1] = v end
end
redis.call('XADD', KEYS[7], '*', unpack(entry))
redis.call('XADD', KEYS[7], '*', 'kind', 'event', 'id', 'evt_' .. charge .. '_credited', 'acct', acct,
  'type', 'refill.succeeded', 'at', now, 'data', cjson.encode({credits = net, balance = balance,
    charge_id = charge, mode = kind == 'refill' and 'auto' or kind}))
return {S_OK, balance, net}
