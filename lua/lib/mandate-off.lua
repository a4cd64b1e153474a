-- Turns an account's auto-refill mandate off and forgets its card, for a reason the owner is shown
-- (`disabled_reason`): the bank wanted the card holder present (release-refill.lua), or the card
-- holder disputed a payment to us (reverse-charge.lua). The account hash loses `refill_below`, so
-- the debit stops flagging refills, and the mandate's snapshot goes to the outbox (its Postgres
-- projection). Spliced in by `--@include mandate-off`.
local function mandate_off(mandate, account, outbox, acct, now, reason)
  redis.call('HDEL', mandate, 'brand', 'last4', 'pm', 'retry_after')
  redis.call('HSET', mandate, 'enabled', '0', 'disabled_reason', reason)
  redis.call('HDEL', account, 'refill_below')
  local s = redis.call('HMGET', mandate, 'threshold', 'refill', 'ceiling', 'customer', 'gateway')
  redis.call('XADD', outbox, '*', 'kind', 'mandate', 'id', acct .. ':mandate:' .. now, 'acct', acct,
    'enabled', '0', 'threshold', s[1] or '', 'refill', s[2] or '', 'ceiling', s[3] or '',
    'brand', '', 'last4', '', 'customer', s[4] or '', 'gateway', s[5] or '',
    'reason', reason, 'at', now)
end
