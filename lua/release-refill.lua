--[[
  keys: 5
  release-refill.lua: the processor refused a refill's charge, or never received it. The reserved
  amount stops counting against the month's ceiling (`pending`, KEYS[5]) — also when the answer
  arrives late (by webhook, or from the look-up of an attempt whose answer was lost), after the
  lock lapsed. If the attempt still holds the refill lock, it also frees the lock and the day's
  top-up (a declined top-up did not happen), remembers the failure, and:
  - 'declined' in auto mode: no new auto attempt before `retry_after` — a card is not hammered on
    every paid call; in topup mode: counted per HKT day (`topup_declines`, `topup_declines_day`),
    reserve-refill.lua refusing the day's top-ups once there are enough (the agent may retry, not loop);
  - 'authentication_required': the bank wants the card holder present, which an off-session refill
    never is, so the mandate is disabled and its card forgotten here until a new consent
    (the owner is told through the consent page, enable_url);
  - 'void': the processor holds no charge of the attempt (it never got there): nothing failed at
    the card, so no failure is remembered and there is no back-off.
  Only the attempt that holds the lock releases it. When the card charged (`pending_pm`) is no longer
  the mandate's — replaced by a consent, or forgotten, while the charge was in flight — the lock and
  the day's top-up are freed but nothing is held against the mandate: no failure, no back-off, no
  disabling (that would forget the card the owner just saved).

  KEYS[1] mandate hash                      {s}:mandate:<acct>
  KEYS[2] account hash                      {s}:acct:<acct>
  KEYS[3] top-up of the attempt's HKT day   {s}:topup:<acct>:<day>
  KEYS[4] outbox stream                     {s}:outbox
  KEYS[5] refills of the attempt's month    {s}:refills:<acct>:<YYYY-MM>

  ARGV[1] now, epoch ms (app clock)
  ARGV[2] account id
  ARGV[3] attempt id
  ARGV[4] outcome: 'declined' | 'authentication_required' | 'void'
  ARGV[5] failure code from the processor ('' for 'void')
  ARGV[6] auto-refill back-off after a decline, ms

  Returns {OK, mode, 'replaced'?} (mode '' when only the pending amount was released; 'replaced'
          when the card charged is no longer the mandate's)
        | {ALREADY_APPLIED} (neither the lock nor a pending amount is this attempt's)
]]

--@include mandate-off

--@include status
local now, acct, attempt, outcome = tonumber(ARGV[1]), ARGV[2], ARGV[3], ARGV[4]

local m = redis.call('HMGET', KEYS[1], 'pending', 'pending_mode', 'pending_pm', 'pm', 'pending_day', 'topup_declines_day')
local reserved = redis.call('HGET', KEYS[5], 'a:' .. attempt)
if m[1] ~= attempt and not reserved then return {S_ALREADY_APPLIED} end

if reserved then
  redis.call('HDEL', KEYS[5], 'a:' .. attempt)
  redis.call('HINCRBY', KEYS[5], 'pending', -tonumber(reserved))
end
if m[1] ~= attempt then return {S_OK, ''} end
local mode = m[2]

redis.call('HDEL', KEYS[1], 'pending', 'pending_amount', 'pending_until', 'pending_month', 'pending_mode', 'pending_day', 'pending_pm')
if mode == 'topup' and redis.call('GET', KEYS[3]) == attempt then redis.call('DEL', KEYS[3]) end
if outcome == 'void' then return {S_OK, mode} end
-- The card charged is no longer the mandate's (a consent replaced it, or it was forgotten, while the
-- charge was at the processor): its refusal says nothing about the card saved now.
if m[3] and m[3] ~= m[4] then return {S_OK, mode, 'replaced'} end
redis.call('HSET', KEYS[1], 'last_failure', ARGV[5], 'last_failure_at', now)

if outcome == 'authentication_required' then
  mandate_off(KEYS[1], KEYS[2], KEYS[4], acct, now, 'authentication_required')
elseif mode == 'auto' then
  redis.call('HSET', KEYS[1], 'retry_after', now + tonumber(ARGV[6]))
elseif m[5] then
  if m[6] ~= m[5] then redis.call('HSET', KEYS[1], 'topup_declines', 0, 'topup_declines_day', m[5]) end
  redis.call('HINCRBY', KEYS[1], 'topup_declines', 1)
end
return {S_OK, mode}
