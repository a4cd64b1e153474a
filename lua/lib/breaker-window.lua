-- The runaway-agent breaker's count of the credits an agent spent in a minute (debit.lua adds each
-- debit's price to its minute's window, `credits`), lowered by what a call gave back: a refund's
-- whole price, a settle's release. So the breaker weighs credits kept, not credits reserved and
-- then released (a metered call reserves the most it could cost) nor credits refunded (a provider
-- outage must not kill the agents whose calls it failed). Only a window that still lives moves (it
-- lives two minutes: a late give-back creates no key without expiry), never below 0, and only when
-- `minute` (the caller's, from the debit instant) is the call record's: the key is the caller's
-- to lay out, the record says which window the debit counted in — and whether it counted there at
-- all (`counted`, the record's `brk`: not while the agent's breaker was off). A breaker trip deletes the
-- agent's windows and stamps its hash's `brk_reset` (debit.lua): a window of that minute since is the
-- revived agent's fresh one, which never counted a call debited up to the trip, so such a call's
-- give-back leaves it alone (else the revived agent could spend past its limit).
local function release_breaker(window, agent_hash, minute, call_at, counted, amount_s)
  if counted ~= '1' or minute == '' or not call_at or string.format('%d', math.floor(tonumber(call_at) / 60000)) ~= minute then return end
  if redis.call('EXISTS', window) == 0 then return end
  local reset = redis.call('HGET', agent_hash, 'brk_reset')
  if reset and tonumber(call_at) <= tonumber(reset) then return end
  if redis.call('HINCRBY', window, 'credits', '-' .. amount_s) < 0 then redis.call('HSET', window, 'credits', '0') end
end
