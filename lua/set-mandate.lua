--[[
  keys: 3
  set-mandate.lua: every change of an auto-refill mandate — a completed consent, new limits,
  enable/disable, forgetting the card. The mandate lives in the account's slot, and the account
  hash mirrors its threshold as `refill_below` exactly while it is enabled, so debit.lua can flag a
  refill from the hash it already reads (no extra key, no extra round trip on the paid path).
  Each change appends a `mandate` snapshot to the outbox: Postgres keeps the durable copy.

  KEYS[1] mandate hash   {s}:mandate:<acct>
  KEYS[2] account hash   {s}:acct:<acct>
  KEYS[3] outbox stream  {s}:outbox

  ARGV[1] now, epoch ms (app clock)
  ARGV[2] account id
  ARGV[3] op: 'consent' | 'update' | 'forget' | 'start'
    consent:  ARGV[4] card brand, [5] last4, [6] gateway customer, [7] payment method,
              [8] threshold, [9] refill, [10] ceiling, [11] consent id, [12] gateway,
              [13] '1' when the consent completes a processor session recorded by 'start' (Stripe
              Checkout), '' when it was saved in this very request (sandbox).
              A consent id already applied is not applied again: the return page and the webhook
              both complete the same setup. A started session is applied only if it is the one
              the owner started last (`consent_started`), and only once: a session the owner
              started before another one, or before forgetting the card, is STALE — replaying
              its return page or a late webhook must not bring an old card back.
              The limits are written only where the mandate has none yet (the defaults the page
              showed): a consent saves a card, it never changes limits — those are the
              operator's (update), and a setup completing late must not undo an update made
              meanwhile.
    update:   ARGV[4] threshold, [5] refill, [6] ceiling, [7] enabled '1'|'0'; '' = unchanged
    forget:   ARGV[4] reason written to the snapshot; every session started or applied before
              it is stale from now on
    start:    ARGV[4] gateway customer id (one customer per account across consents),
              ARGV[5] the processor session just started: the only one a consent may now complete

  Returns {OK, customer, payment_method} (forget: the card just forgotten; consent: the card just
          saved, then the customer, payment method and gateway of the card it replaced, '' for
          none: the app detaches that one at the processor, as DELETE does)
        | {ALREADY_APPLIED} | {CONSENT_STALE} (not the session started last, or started before a
          forget) | {CONSENT_REQUIRED} (enable without a saved card) | {NOT_FOUND}
]]

--@include status
local now, acct, op = ARGV[1], ARGV[2], ARGV[3]

if redis.call('EXISTS', KEYS[2]) == 0 then return {S_NOT_FOUND} end

-- The durable copy: the whole mandate as it now is (minus the card's processor ids).
local function snapshot(reason)
  local m = redis.call('HMGET', KEYS[1], 'enabled', 'threshold', 'refill', 'ceiling', 'brand', 'last4', 'customer', 'gateway')
  redis.call('XADD', KEYS[3], '*', 'kind', 'mandate', 'id', acct .. ':mandate:' .. now, 'acct', acct,
    'enabled', m[1] or '0', 'threshold', m[2] or '', 'refill', m[3] or '', 'ceiling', m[4] or '',
    'brand', m[5] or '', 'last4', m[6] or '', 'customer', m[7] or '', 'gateway', m[8] or '',
    'reason', reason, 'at', now)
end

-- refill_below = threshold while enabled, absent otherwise (read by debit.lua).
local function mirror()
  local m = redis.call('HMGET', KEYS[1], 'enabled', 'threshold')
  if m[1] == '1' and m[2] then
    redis.call('HSET', KEYS[2], 'refill_below', m[2])
  else
    redis.call('HDEL', KEYS[2], 'refill_below')
  end
end

if op == 'consent' then
  -- consent_id: the consent applied last; consent_started: the session the owner started last.
  local c = redis.call('HMGET', KEYS[1], 'consent_id', 'consent_started', 'customer', 'pm', 'gateway')
  if c[1] == ARGV[11] then return {S_ALREADY_APPLIED} end
  if ARGV[13] == '1' and c[2] ~= ARGV[11] then return {S_CONSENT_STALE} end
  -- The card this consent replaces (none when it is the same payment method).
  local old_pm = c[4] or ''
  if old_pm == ARGV[7] then old_pm = '' end
  redis.call('HDEL', KEYS[1], 'consent_started')
  redis.call('HSET', KEYS[1], 'brand', ARGV[4], 'last4', ARGV[5], 'customer', ARGV[6], 'pm', ARGV[7],
    'consent_id', ARGV[11], 'gateway', ARGV[12], 'enabled', '1', 'consented_at', now)
  redis.call('HSETNX', KEYS[1], 'threshold', ARGV[8])
  redis.call('HSETNX', KEYS[1], 'refill', ARGV[9])
  redis.call('HSETNX', KEYS[1], 'ceiling', ARGV[10])
  redis.call('HDEL', KEYS[1], 'disabled_reason', 'retry_after', 'topup_declines', 'topup_declines_day')
  mirror()
  snapshot('consent')
  if old_pm == '' then return {S_OK, ARGV[6], ARGV[7], '', '', ''} end
  return {S_OK, ARGV[6], ARGV[7], c[3] or '', old_pm, c[5] or ''}
end

if op == 'update' then
  if ARGV[7] == '1' and not redis.call('HGET', KEYS[1], 'pm') then return {S_CONSENT_REQUIRED} end
  local names = {'threshold', 'refill', 'ceiling', 'enabled'}
  for i, name in ipairs(names) do
    if ARGV[3 + i] ~= '' then redis.call('HSET', KEYS[1], name, ARGV[3 + i]) end
  end
  if ARGV[7] == '1' then redis.call('HDEL', KEYS[1], 'disabled_reason', 'retry_after') end
  mirror()
  snapshot('update')
  return {S_OK}
end

if op == 'forget' then
  local card = redis.call('HMGET', KEYS[1], 'customer', 'pm')
  -- The consent ids go too: no session started or applied before the forget counts any more.
  redis.call('HDEL', KEYS[1], 'brand', 'last4', 'pm', 'retry_after', 'consent_id', 'consent_started')
  redis.call('HSET', KEYS[1], 'enabled', '0')
  mirror()
  snapshot(ARGV[4])
  return {S_OK, card[1] or '', card[2] or ''}
end

if op == 'start' then
  redis.call('HSET', KEYS[1], 'customer', ARGV[4], 'consent_started', ARGV[5])
  return {S_OK}
end

return redis.error_reply('set-mandate: unknown op ' .. tostring(op))
