--[[
  keys: 12
  refund.lua: give back the debit of one call whose provider failed. Keyed by the call record, so a
  refund applies at most once however often it is retried. The refunded call stops counting against
  the day's caps. The refund is a new ledger entry naming the debit it corrects; a metered call's
  reservation, a hold with no ledger entry, is only released.
  An agent's call also gives its credits back to the agent's `spent_total` and, along its chain
  (docs/api.md §8), to every ancestor's spent_total and day spend, exactly as the debit took them
  (lua/lib/budget.lua release_chain: an agent's day spend is its hash's `day_spent`, lowered only
  while the hash's `day` is still the call's day, the call record's `day`). The chain comes from
  the caller (immutable, cached) and must be the one the debit stored on the call record; the agent
  hash (KEYS[7]) must be the record's agent's, and the call must be in flight under the account it
  is given for (KEYS[6]: the record does not name its account), or the refund fails, writing nothing.

  KEYS[1] account hash                {s}:acct:<acct>
  KEYS[2] call record                 {s}:call:<call_id>
  KEYS[3] account spend of the call's HKT day  {s}:spent:<acct>:<day>
  KEYS[4] unpriced requests of the call's HKT day
  KEYS[5] outbox stream               {s}:outbox
  KEYS[6] in-flight calls of the shard {s}:inflight
  KEYS[7] the call's agent hash       {s}:agent:<acct>:<agent|_owner>  (never written for the owner; the
          record's agent's, or the call fails)
  KEYS[8]  ancestor 1's hash          \  the chain, parent first; a slot past its
  KEYS[9]  ancestor 2's hash           | length repeats KEYS[7]
  KEYS[10] ancestor 3's hash          /
  KEYS[11] the agent's breaker window of the minute the call was debited in
           {s}:brk:<acct>:<agent>:<minute> (ARGV[7]); for the owner, or with ARGV[7] '', KEYS[7]
  KEYS[12] the run the call record names {s}:run:<acct>:<run id> (docs/api.md §13c), which gets the
           price back; KEYS[7] when it names none (a record that names one refuses KEYS[7] here)

  ARGV[1] now, epoch ms
  ARGV[2] call id
  ARGV[3] account id
  ARGV[4] reason (provider_5xx, timeout, network, too_large, ...)
  ARGV[5] '' for a refund of the request's own failure; for the sweeper's refund of a cut-off call,
          the "now" it swept at: the call is refunded only if its in-flight deadline is still at or
          before it, so a lease renewed since the sweep read the set (src/paid-request/leases.ts) wins
  ARGV[6] the agent's chain: ancestor ids, parent first, joined by ',' ('' = none)
  ARGV[7] the minute (epoch ms / 60000) of KEYS[11], from the debit instant ('' = no window given);
          the refund comes off that window's `credits` only when it is the call record's minute
          (lua/lib/breaker-window.lua)

  Returns {OK, balance_after, amount given back} | {ALREADY_APPLIED, balance} | {NOT_FOUND, 0} | {NOT_DUE, 0}
]]

--@include status

--@include budget

--@include breaker-window

--@include run-release

local now = ARGV[1]
local call_id = ARGV[2]

-- The common record is a string (debit.lua): a flat call's state|price|day|at|agent|chain|brk|target,
-- a metered call's m|metered|state|price|day|at|agent|chain|brk|max_out|… (its hold the shape's own);
-- any other a hash, field by field. Read into the hash's places: state, price, agent, unpriced,
-- target, chain, day, at, brk, hold, run (a string has no unpriced nor run; a metered one's target
-- is left unread: only a refund entry names it, and a hold has none). `head` and `rest`: the string
-- around its state, kept as they are when the state changes.
local call, head, rest
if redis.call('TYPE', KEYS[2]).ok == 'string' then
  local raw = redis.call('GET', KEYS[2])
  if string.sub(raw, 1, 2) == 'm|' then
    local lane, state, price, day, at, agent, chain_was, brk = string.match(raw, '^m|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|')
    if not state then return redis.error_reply('refund: a damaged call record') end
    call = {state, price, agent, false, false, chain_was ~= '' and chain_was or false, day, at, brk ~= '' and brk or false, '1', false}
    head = 'm|' .. lane .. '|'
    rest = string.sub(raw, #head + #state + 1)
  else
    local state, price, day, at, agent, chain_was, brk, target = string.match(raw, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|(.*)$')
    -- Filed, the record is the bare word `filed` (record-calls.lua): nothing left to give back.
    if not state then return {S_ALREADY_APPLIED, tonumber(redis.call('HGET', KEYS[1], 'balance') or '0')} end
    call = {state, price, agent, false, target, chain_was ~= '' and chain_was or false, day, at, brk ~= '' and brk or false, false, false}
    head, rest = '', string.sub(raw, #state + 1)
  end
else
  call = redis.call('HMGET', KEYS[2], 'state', 'price', 'agent', 'unpriced', 'target', 'chain', 'day', 'at', 'brk', 'hold', 'run')
end
if not call[1] then return {S_NOT_FOUND, 0} end
if call[11] and KEYS[12] == KEYS[7] then return redis.error_reply('refund: the call\'s run ' .. call[11] .. ' was not given') end
local chain = ARGV[6] or ''
if (call[6] or '') ~= chain then return redis.error_reply('refund: chain ' .. chain .. ' is not the call\'s') end
-- The agent hash given back to must be the one the record names (its account's, `_owner` for the
-- owner's call): the chain alone cannot tell two top-level agents apart.
local own = ':agent:' .. ARGV[3] .. ':' .. ((call[3] or '') ~= '' and call[3] or '_owner')
if string.sub(KEYS[7], -#own) ~= own then return redis.error_reply('refund: agent hash ' .. KEYS[7] .. ' is not the call\'s') end
if call[1] ~= 'debited' then
  return {S_ALREADY_APPLIED, tonumber(redis.call('HGET', KEYS[1], 'balance') or '0')}
end
local member = ARGV[3] .. '|' .. call_id
if ARGV[5] and ARGV[5] ~= '' then
  local deadline = redis.call('ZSCORE', KEYS[6], member)
  if deadline and tonumber(deadline) > tonumber(ARGV[5]) then return {S_NOT_DUE, 0} end
end
local price = tonumber(call[2])

-- A debited call is in the shard's in-flight set under its account until its filing, settle or
-- refund takes it out (debit.lua), and its record does not name the account: found there and
-- taken out first, before any other write, it proves the call is the given account's.
if redis.call('ZREM', KEYS[6], member) == 0 then
  return redis.error_reply('refund: call ' .. call_id .. ' is not in flight for account ' .. ARGV[3])
end
if rest then redis.call('SET', KEYS[2], head .. 'refunded' .. rest, 'KEEPTTL') else redis.call('HSET', KEYS[2], 'state', 'refunded') end
-- A metered call's reservation is a hold (`hold` on its call record, lua/debit.lua): what the
-- account still holds of it goes back — all of it, unless the account was restored from the
-- ledger while the call ran and its holds were lost with the hash.
local hold = call[10] == '1'
local held = tonumber(redis.call('HGET', KEYS[1], 'held') or '0')
local back = price
if hold then
  back = math.min(held, price)
  if back > 0 then held = redis.call('HINCRBY', KEYS[1], 'held', -back) end
end
local balance = redis.call('HINCRBY', KEYS[1], 'balance', back)
-- Only touch day counters that still exist: a refund after midnight must not create a key
-- without expiry for a day that is over (nor move an agent's spend of a newer day).
if price > 0 then
  if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('DECRBY', KEYS[3], price) end
  if call[3] ~= '' then
    local hashes = {KEYS[7]}
    for i = 1, #chain_ids(chain) do hashes[i + 1] = KEYS[7 + i] end
    release_chain(hashes, call[7], price)
    release_breaker(KEYS[11], KEYS[7], ARGV[7] or '', call[8], call[9], call[2])
  end
  if call[11] then release_run(KEYS[12], price) end
end
if call[4] == '1' and redis.call('EXISTS', KEYS[4]) == 1 then redis.call('DECR', KEYS[4]) end
-- A hold has no ledger entry to correct. Any other debit gets its refund entry, carrying the posted
-- balance (balance + held) as every entry does.
if not hold then
  redis.call('XADD', KEYS[5], '*', 'kind', 'refund', 'id', call_id .. ':refund', 'acct', ARGV[3],
    'agent', call[3], 'amount', price, 'bal', balance + held, 'call', call_id, 'ref', call_id .. ':debit',
    'target', call[5], 'reason', ARGV[4], 'at', now)
end
return {S_OK, balance, back}
