--[[
  settle-15: the end of a metered call that kept its charge (CONTRACT §7, docs/metering.md). The
  debit reserved the most the request could cost; this charges what the provider's usage actually
  cost and gives the rest of the reservation back, in one step, once per call. Given a record, it
  also files the call as record-call-6 does (the record completed with the charge): one script
  after the upstream instead of two (docs/metering.md "What a metered call costs").

  The exact cost in micro-credits is input × p_in + cached × p_cached + output × p_out, at the
  prices the debit reserved against (on the call record). The account carries a remainder
  0 ≤ r < 1e6 micro-credits (`mc_rem`): the charge is floor((r + cost) / 1e6) credits and the rest
  is the new r, so nothing is rounded away and nothing is charged twice. The charge never passes the
  reservation: past it, the reservation is charged, r is kept, and the excess is recorded as
  `uncharged` (micro-credits) on the entry.

  The release (reservation − charge) goes back to the balance and comes off every window the debit
  counted it in: the account's and the agent's spend of the debit's HKT day (a window that expired
  since is left alone, as refund-14 does). An agent's release also comes off its `spent_total`
  and, along its chain (CONTRACT §8), every ancestor's spent_total and day spend, exactly as the
  debit counted them (lua/lib/budget.lua release_chain; the chain must be the call record's).

  KEYS[1] account hash                 {s}:acct:<acct>
  KEYS[2] call record                  {s}:call:<call_id>
  KEYS[3] account spend of the call's HKT day
  KEYS[4] agent spend of the call's HKT day
  KEYS[5] outbox stream                {s}:outbox
  KEYS[6] in-flight calls of the shard {s}:inflight
  KEYS[7] the call's agent hash        {s}:agent:<acct>:<agent|_owner>  (never written for the owner)
  KEYS[8]  ancestor 1's hash           \  the chain, parent first; a slot past its
  KEYS[9]  ancestor 2's hash            | length repeats KEYS[7]
  KEYS[10] ancestor 3's hash           /
  KEYS[11] ancestor 1's spend of the call's HKT day  \  likewise; a slot past the
  KEYS[12] ancestor 2's spend of the call's HKT day   | chain repeats KEYS[4]
  KEYS[13] ancestor 3's spend of the call's HKT day  /
  KEYS[14] recent calls list           {s}:calls:<acct>   \  written only when ARGV[9] is given
  KEYS[15] shard counters              {s}:stats          /

  ARGV[1] now, epoch ms
  ARGV[2] call id
  ARGV[3] account id
  ARGV[4] input tokens (not cached), ARGV[5] cached input tokens, ARGV[6] output tokens
  ARGV[7] usage source: provider | estimated
  ARGV[8] the agent's chain: ancestor ids, parent first, joined by ',' ('' = none)
  ARGV[9]  the call record as JSON without its closing brace, nor `charged` and `uncharged`, which
           this script appends ('' = file nothing: the caller runs record-call-6, e.g. to store an
           Idempotency-Key answer built from the balance after the settle)
  ARGV[10] '1' when the call counts as organic (record-call-6's ARGV[4])
  ARGV[11] how many recent calls the list keeps (record-call-6's ARGV[7])
  ARGV[12] seconds the call record is kept once filed (record-call-6's ARGV[9])

  The ledger entry is a `refund` of the released part naming the debit (amount may be 0), with
  the model, the token counts, the charge and the uncharged excess.

  Returns {OK, balance_after, charged, released, uncharged_micro}
        | {ALREADY_APPLIED, balance} (settled or refunded before) | {NOT_FOUND, 0} (or not metered)
]]

--@include status

--@include budget

local now, call_id, account_id = ARGV[1], ARGV[2], ARGV[3]
local t_in, t_cached, t_out = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local MICRO = 1000000

local call = redis.call('HMGET', KEYS[2], 'state', 'price', 'agent', 'target', 'metered', 'model', 'p_in', 'p_cached', 'p_out', 'chain')
if not call[1] or call[5] ~= '1' then return {S_NOT_FOUND, 0} end
local chain = ARGV[8] or ''
if (call[10] or '') ~= chain then return redis.error_reply('settle: chain ' .. chain .. ' is not the call\'s') end
if call[1] ~= 'debited' then
  return {S_ALREADY_APPLIED, tonumber(redis.call('HGET', KEYS[1], 'balance') or '0')}
end
local reserved = tonumber(call[2])
local cost = t_in * tonumber(call[7]) + t_cached * tonumber(call[8]) + t_out * tonumber(call[9])
local r = tonumber(redis.call('HGET', KEYS[1], 'mc_rem') or '0')
local charged = math.floor((r + cost) / MICRO)
local uncharged = 0
if charged > reserved then
  charged = reserved
  uncharged = cost - reserved * MICRO
else
  r = r + cost - charged * MICRO
end
local released = reserved - charged
local head = ARGV[9] or ''

if head ~= '' then
  redis.call('HSET', KEYS[2], 'state', 'settled', 'charged', charged, 'recorded', '1')
  redis.call('EXPIRE', KEYS[2], tonumber(ARGV[12]))
else
  redis.call('HSET', KEYS[2], 'state', 'settled', 'charged', charged)
end
redis.call('ZREM', KEYS[6], account_id .. '|' .. call_id)
local balance = redis.call('HINCRBY', KEYS[1], 'balance', released)
redis.call('HSET', KEYS[1], 'mc_rem', r)
if released > 0 then
  if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('DECRBY', KEYS[3], released) end
  if call[3] ~= '' and redis.call('EXISTS', KEYS[4]) == 1 then redis.call('DECRBY', KEYS[4], released) end
  if call[3] ~= '' then
    local hashes, days = {KEYS[7]}, {false}
    for i = 1, #chain_ids(chain) do hashes[i + 1] = KEYS[7 + i]; days[i + 1] = KEYS[10 + i] end
    release_chain(hashes, days, released)
  end
end
redis.call('XADD', KEYS[5], '*', 'kind', 'refund', 'id', call_id .. ':settle', 'acct', account_id,
  'agent', call[3], 'amount', released, 'bal', balance, 'call', call_id, 'ref', call_id .. ':debit',
  'target', call[4], 'reason', 'metered_settle', 'at', now, 'model', call[6], 'tin', t_in,
  'tcached', t_cached, 'tout', t_out, 'charged', charged, 'uncharged_micro', uncharged,
  'usage', ARGV[7], 'rem', r)
if head ~= '' then
  -- As record-call-6 files it (same list trim, counters and outbox entry); `uncharged` in credits,
  -- rounded up, as the record has always shown it.
  local record = head .. ',"charged":' .. charged .. ',"uncharged":' .. math.ceil(uncharged / MICRO) .. '}'
  local keep = tonumber(ARGV[11])
  if redis.call('LPUSH', KEYS[14], record) > keep + 32 then redis.call('LTRIM', KEYS[14], 0, keep - 1) end
  if ARGV[10] == '1' then
    redis.call('HINCRBY', KEYS[15], 'organic_calls_routed', 1)
    redis.call('HINCRBY', KEYS[15], 'credits_honored', charged)
  end
  redis.call('XADD', KEYS[5], '*', 'kind', 'call', 'id', call_id .. ':call', 'organic', ARGV[10], 'charged', charged, 'rec', record)
end
return {S_OK, balance, charged, released, uncharged}
