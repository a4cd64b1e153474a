--[[
  keys: 5
  reserve-refill.lua: may this account's saved card be charged now? The decision taken before any
  charge, for the background auto-refill ('auto') and for the agent's explicit top-up ('topup').
  Every rule is checked first; then the refill is reserved. The mandate's `pending` fields are the
  refill lock — one refill in flight per account, across every instance — and they hold until
  credit-topup-7 (paid) or release-refill.lua (refused) settles the attempt. A lock whose holder died
  lapses at `pending_until` (longer than the gateway's longest call with its retries).
  The reserved amount also counts against the month's ceiling as `pending` in KEYS[3] (`a:<attempt>`
  names each one) until the charge's outcome is known, however long that takes: a charge whose
  answer was lost outlives its lock, and may still be paid. So `ceiling - refilled - pending` is
  what may still be charged (and `posted + pending` what the balance may yet become, weighed against
  the balance cap); credit-topup-7 moves the amount to `refilled`, release-refill.lua drops it.
  The previous month's `pending` counts against the balance cap too (not against this month's
  ceiling): a charge still unknown at the month's turn may be credited in the new one.

  KEYS[1] account hash               {s}:acct:<acct>
  KEYS[2] mandate hash               {s}:mandate:<acct>
  KEYS[3] refills of this HKT month  {s}:refills:<acct>:<YYYY-MM>  (`refilled`, `pending`, `a:<attempt>`)
  KEYS[4] top-up of this HKT day     {s}:topup:<acct>:<day>  (written in 'topup' mode only)
  KEYS[5] refills of the HKT month before  {s}:refills:<acct>:<YYYY-MM>  (read only)

  ARGV[1] now, epoch ms (app clock)
  ARGV[2] mode: 'auto' | 'topup'
  ARGV[3] credits to charge; '' = the mandate's refill
  ARGV[4] attempt id (also the processor's idempotency key)
  ARGV[5] HKT month 'YYYY-MM' of KEYS[3]
  ARGV[6] HKT day number of KEYS[4]
  ARGV[7] how long the lock holds, ms
  ARGV[8] TTL of the day marker, s
  ARGV[9] this deployment's gateway: a card saved through another one cannot be charged
  ARGV[10] balance cap when the account has none of its own
  ARGV[11] TTL of KEYS[3], s
  ARGV[12] declined top-ups a HKT day may make before that day's top-ups are refused
           (release-refill.lua counts them in the mandate; a new consent clears the count)

  Returns {OK, credits, customer, payment_method, balance}
        | {NO_MANDATE} | {REFILL_IN_FLIGHT} | {REFILL_NOT_NEEDED, balance, threshold}
        | {REFILL_BACKOFF, retry_after_ms} (topup: 0, the day's declined top-ups are used up) | {TOPUP_TODAY}
        | {CEILING_REACHED, refilled, ceiling, credits, pending} | {BALANCE_CAP, balance, balance_cap, credits}
        | {NOT_FOUND}
]]

--@include status

local now = tonumber(ARGV[1])
local mode = ARGV[2]
local attempt = ARGV[4]
local hold_ms = tonumber(ARGV[7])

local acct = redis.call('HMGET', KEYS[1], 'balance', 'balance_cap', 'held')
if not acct[1] then return {S_NOT_FOUND} end
local balance = tonumber(acct[1])
local cap = tonumber(acct[2] or ARGV[10])

-- enabled, limits, card, back-off, and the refill in flight (if any)
local m = redis.call('HMGET', KEYS[2], 'enabled', 'threshold', 'refill', 'ceiling', 'customer', 'pm',
  'gateway', 'retry_after', 'pending', 'pending_until', 'topup_declines', 'topup_declines_day')
if m[1] ~= '1' or not m[6] or m[7] ~= ARGV[9] then return {S_NO_MANDATE} end
local threshold = tonumber(m[2] or '0')
local credits = tonumber(ARGV[3] ~= '' and ARGV[3] or (m[3] or '0'))
local ceiling = tonumber(m[4] or '0')

if m[9] and tonumber(m[10] or '0') > now then return {S_REFILL_IN_FLIGHT} end
if credits <= 0 then return {S_REFILL_NOT_NEEDED, balance, threshold} end
if mode == 'auto' then
  if m[8] and tonumber(m[8]) > now then return {S_REFILL_BACKOFF, tonumber(m[8]) - now} end
  if balance >= threshold then return {S_REFILL_NOT_NEEDED, balance, threshold} end
else
  if redis.call('EXISTS', KEYS[4]) == 1 then return {S_TOPUP_TODAY} end
  if m[12] == ARGV[6] and tonumber(m[11] or '0') >= tonumber(ARGV[12]) then return {S_REFILL_BACKOFF, 0} end
end
local month = redis.call('HMGET', KEYS[3], 'refilled', 'pending')
local refilled, pending = tonumber(month[1] or '0'), tonumber(month[2] or '0')
if refilled + pending + credits > ceiling then return {S_CEILING_REACHED, refilled, ceiling, credits, pending} end
-- Against the posted balance, as credit-topup-7 weighs it (the holds of metered calls in flight come
-- back unless spent); the threshold above weighs what can be spent. Charges whose outcome is not
-- known yet count too, as for the ceiling: one may still be credited, and this charge would then
-- only be parked (money taken, a human to decide). Those of the month before as well.
local posted = balance + tonumber(acct[3] or '0')
local pending_before = tonumber(redis.call('HGET', KEYS[5], 'pending') or '0')
if posted + pending + pending_before + credits > cap then return {S_BALANCE_CAP, posted, cap, credits} end

-- All checks passed: take the lock.
-- pending_pm: the card charged, so a refusal is not held against a card saved meanwhile (release-refill.lua).
redis.call('HSET', KEYS[2], 'pending', attempt, 'pending_amount', credits, 'pending_until', now + hold_ms,
  'pending_month', ARGV[5], 'pending_mode', mode, 'pending_day', ARGV[6], 'pending_pm', m[6])
redis.call('HINCRBY', KEYS[3], 'pending', credits)
redis.call('HSET', KEYS[3], 'a:' .. attempt, credits)
redis.call('EXPIRE', KEYS[3], tonumber(ARGV[11]))
if mode == 'topup' then
  redis.call('SET', KEYS[4], attempt, 'EX', tonumber(ARGV[8]))
end
return {S_OK, credits, m[5] or '', m[6], balance}
