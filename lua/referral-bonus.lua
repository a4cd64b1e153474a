--[[
  keys: 4
  referral-bonus.lua: after the referred account's first successful call, credit both sides once.
  Claiming the pending referral (HDEL) is the exactly-once guard: concurrent first calls race on
  it and only one wins. Both accounts share the shard, so both credits and both entries are atomic.
  The first call may cost next to nothing, so the bonus is bounded: a referrer earns at most
  ARGV[5] bonuses per HKT day (the referred side still gets its own), and no side is lifted past
  its balance cap. What is not credited stays on the entry: `uncredited` credits and the `reason`
  (`referrer_daily_limit` | `balance_cap`); the entry's amount is what was credited (maybe 0).

  KEYS[1] referred account hash                  {s}:acct:<acct>
  KEYS[2] referrer account hash                  {s}:acct:<referrer>
  KEYS[3] referrer's bonuses of this HKT day     {s}:refbonus:<referrer>:<day>
  KEYS[4] outbox stream                          {s}:outbox

  ARGV[1] now, epoch ms
  ARGV[2] referred account id
  ARGV[3] bonus, credits (each side)
  ARGV[4] the call id that earned it
  ARGV[5] bonuses a referrer may earn per HKT day
  ARGV[6] TTL of KEYS[3], s
  ARGV[7] balance cap of an account that has none of its own

  Returns {OK, referred_balance} | {ALREADY_APPLIED, 0}
]]

--@include status
local now, acct, bonus = ARGV[1], ARGV[2], tonumber(ARGV[3])
local per_day = tonumber(ARGV[5])

local referrer = redis.call('HGET', KEYS[1], 'referrer')
if not referrer then return {S_ALREADY_APPLIED, 0} end

-- What one side may receive: the bonus, less what would pass its cap; a limited side gets nothing.
-- With the side's account as read: its balance and what its metered calls in flight hold.
local function share(key, limited)
  local a = redis.call('HMGET', key, 'balance', 'balance_cap', 'held')
  local balance, held = tonumber(a[1] or '0'), tonumber(a[3] or '0')
  local side = {amount = bonus, reason = '', balance = balance, held = held}
  -- Room under the cap beside the posted balance, the holds included (they come back unless
  -- spent: credit-topup-7).
  local room = math.max(0, tonumber(a[2] or ARGV[7]) - balance - held)
  if limited then side.amount, side.reason = 0, 'referrer_daily_limit'
  elseif bonus > room then side.amount, side.reason = room, 'balance_cap' end
  return side
end

-- Every check first: both shares are decided before anything is written.
local referred = share(KEYS[1], false)
local has_referrer = redis.call('EXISTS', KEYS[2]) == 1
local earned_today = tonumber(redis.call('GET', KEYS[3]) or '0')
local referring = has_referrer and share(KEYS[2], earned_today >= per_day)

-- The two sides are two accounts: each is written once, after both were read.
local function pay(key, who, name, side)
  local bal = side.amount > 0 and redis.call('HINCRBY', key, 'balance', side.amount) or side.balance
  -- `bal` of the entry is the posted balance (balance + held), as every entry's.
  local entry = {'kind', 'referral', 'id', acct .. ':referral:' .. name, 'acct', who,
    'agent', '', 'amount', side.amount, 'bal', bal + side.held, 'call', ARGV[4], 'at', now}
  if side.amount < bonus then
    table.insert(entry, 'uncredited'); table.insert(entry, bonus - side.amount)
    table.insert(entry, 'reason'); table.insert(entry, side.reason)
  end
  redis.call('XADD', KEYS[4], '*', unpack(entry))
  return bal
end

redis.call('HDEL', KEYS[1], 'referrer')
local b1 = pay(KEYS[1], acct, 'referred', referred)
if referring then
  -- A bonus lost to the cap still counts as earned; one refused by the daily limit does not.
  if referring.reason ~= 'referrer_daily_limit' then
    redis.call('INCR', KEYS[3])
    redis.call('EXPIRE', KEYS[3], tonumber(ARGV[6]))
  end
  pay(KEYS[2], referrer, 'referrer', referring)
end
return {S_OK, b1}
