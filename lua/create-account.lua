--[[
  keys: 3
  create-account.lua: open an account with its signup grant. The grant is a ledger entry in the same
  script as the balance it creates. A referred account lives in its referrer's shard, so the
  referrer's existence is checked here and the bonus can later credit both sides in one script.

  KEYS[1] new account hash    {s}:acct:<acct>
  KEYS[2] referrer's account  {s}:acct:<referrer>  (never-written key when not referred)
  KEYS[3] outbox stream       {s}:outbox

  ARGV[1] now, epoch ms
  ARGV[2] account id
  ARGV[3] SHA-256 of the owner token
  ARGV[4] e-mail
  ARGV[5] public_ref
  ARGV[6] origin ('' when none)
  ARGV[7] referrer account id ('' when none)
  ARGV[8] signup grant, credits
  ARGV[9] balance cap, credits
  ARGV[10] mandate ref: the unguessable ref of the saved-card consent page (/mandate?ref=)

  Returns {OK, balance} (also for a resend of the same signup) | {ALREADY_APPLIED, 0} | {NOT_FOUND, 0} (referrer gone)
]]

--@include status
local now, acct, referrer, grant = ARGV[1], ARGV[2], ARGV[7], tonumber(ARGV[8])

-- Created already by this very signup (same owner token hash): a resend after a lost reply.
-- Answer as the first run did, write nothing.
if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('HGET', KEYS[1], 'owner') == ARGV[3] then
    return {S_OK, tonumber(redis.call('HGET', KEYS[1], 'balance'))}
  end
  return {S_ALREADY_APPLIED, 0}
end
if referrer ~= '' and redis.call('EXISTS', KEYS[2]) == 0 then return {S_NOT_FOUND, 0} end

-- LAYOUT_FIELD: this write makes the hash a hashtable, not a listpack (src/redis/hash-layout.ts).
--@include hash-layout
redis.call('HSET', KEYS[1], LAYOUT_FIELD, LAYOUT_VALUE, 'owner', ARGV[3], 'balance', grant, 'email', ARGV[4],
  'public_ref', ARGV[5], 'balance_cap', ARGV[9], 'mref', ARGV[10], 'created', now)
if referrer ~= '' then redis.call('HSET', KEYS[1], 'referrer', referrer) end

redis.call('XADD', KEYS[3], '*', 'kind', 'account', 'id', acct .. ':account', 'acct', acct,
  'email', ARGV[4], 'public_ref', ARGV[5], 'origin', ARGV[6], 'referrer', referrer,
  'owner', ARGV[3], 'at', now)
redis.call('XADD', KEYS[3], '*', 'kind', 'grant', 'id', acct .. ':grant', 'acct', acct, 'agent', '',
  'amount', grant, 'bal', grant, 'at', now)
return {S_OK, grant}
