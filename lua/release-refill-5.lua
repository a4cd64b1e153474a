--[[
  release-refill-5: the processor refused a refill's charge, or never received it. The reserved
  amount stops counting against the month's ceiling (`pending`, KEYS[5]) — also when the answer
  arrives late (by webhook, or from the look-up of an attempt whose answer was lost), after the
  lock lapsed. If the attempt still holds the refill lock, it also frees the lock and the day's
  top-up (a declined top-up did not happen), remembers the failure, and:
  - 'declined' in auto mode: no new auto attempt before `retry_after` — a card is not hammered on
    every paid call;
  - 'authentication_required': the bank wants the card holder present, which an off-session refill
    never is, so the mandate is disabled and its card forgotten here until a new consent
    (the owner is told through the consent page, enable_url);
  - 'void': the processor holds no charge of the attempt (it never got there): nothing failed at
    the card, so no failure is remembered and there is no back-off.
  Only the attempt that holds the lock releases it.

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

  Returns {OK, mode} (mode '' when only the pending amount was released)
        | {ALREADY_APPLIED} (neither the lock nor a pending amount is this attempt's)
]]

--@include mandate-off

--@include status
local now, acct, attempt, outcome = tonumber(ARGV[1]), ARGV[2], ARGV[3], ARGV[4]

local m = redis.call('HMGET', KEYS[1], 'pending', 'pending_mode')
local reserved = redis.call('HGET', KEYS[5], 'a:' .. attempt)
if m[1] ~= attempt and not reserved then return {S_ALREADY_APPLIED} end

if reserved then
  redis.call('HDEL', KEYS[5], 'a:' .. attempt)
  redis.call('HINCRBY', KEYS[5], 'pending', -tonumber(reserved))
end
if m[1] ~= attempt then return {S_OK, ''} end
local mode = m[2]

redis.call('HDEL', KEYS[1], 'pending', 'pending_amount', 'pending_until', 'pending_month', 'pending_mode', 'pending_day')
if mode == 'topup' and redis.call('GET', KEYS[3]) == attempt then redis.call('DEL', KEYS[3]) end
if outcome == 'void' then return {S_OK, mode} end
redis.call('HSET', KEYS[1], 'last_failure', ARGV[5], 'last_failure_at', now)

if outcome == 'authentication_required' then
  mandate_off(KEYS[1], KEYS[2], KEYS[4], acct, now, 'authentication_required')
elseif mode == 'auto' then
  redis.call('HSET', KEYS[1], 'retry_after', now + tonumber(ARGV[6]))
end
return {S_OK, mode}
