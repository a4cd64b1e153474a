--[[
  keys: 2
  restore-account.lua: `ledger:rebuild` writes back one account whose Redis state was lost, from
  the durable ledger (Postgres plus the outbox entries still waiting). The balance it writes is
  the sum of the account's ledger entries, so the invariant balance = Σ entries holds again
  without any new entry. An account hash that exists is left alone unless the operator forces it
  (then the service must not be serving the account: a debit between the read of the ledger and
  this write would be overwritten).

  KEYS[1] account hash                {s}:acct:<acct>
  KEYS[2] account spend, this HKT day {s}:spent:<acct>:<day>

  ARGV[1] '1' to replace an existing account hash, '0' to restore only a missing one
  ARGV[2] balance, credits (Σ of the account's ledger entries)
  ARGV[3] spent today, credits (Σ of today's debits minus their refunds)
  ARGV[4] TTL in seconds of the day-windowed keys
  ARGV[5..] field, value pairs of the account hash (owner, email, public_ref, balance_cap, ...)

  Returns {OK, balance} | {ALREADY_APPLIED, posted balance in Redis (balance + held)}
]]

--@include status
local force, balance, spent, day_ttl = ARGV[1] == '1', tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])

-- The ledger's sum is the posted balance; metered calls in flight hold part of it (`held`, which
-- no entry records: lua/debit.lua). A replaced hash keeps its holds, so that those calls'
-- settles and refunds release them from a balance that went without them; a hash that was lost
-- lost its holds with its calls' records, and those calls cost nothing.
local current = redis.call('HMGET', KEYS[1], 'balance', 'held')
local held = tonumber(current[2] or '0')
if current[1] and not force then return {S_ALREADY_APPLIED, tonumber(current[1]) + held} end
if balance < 0 then return redis.error_reply('restore-account: negative balance ' .. balance) end
if balance - held < 0 then return redis.error_reply('restore-account: balance ' .. balance .. ' below the holds ' .. held) end

redis.call('DEL', KEYS[1])
-- LAYOUT_FIELD: a hashtable, as create-account.lua makes it (src/redis/hash-layout.ts).
--@include hash-layout
redis.call('HSET', KEYS[1], LAYOUT_FIELD, LAYOUT_VALUE, 'balance', balance - held)
if held > 0 then redis.call('HSET', KEYS[1], 'held', held) end
for i = 5, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
if spent > 0 then
  redis.call('SET', KEYS[2], spent, 'EX', day_ttl)
else
  redis.call('DEL', KEYS[2])
end
return {S_OK, balance}
