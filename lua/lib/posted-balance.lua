-- The balance a ledger entry carries: the account's spendable `balance` plus what its metered
-- calls in flight hold (`held`, raised by debit.lua), which is what the account's entries sum to
-- (docs/metering.md, "The reservation is a hold").
local function posted_balance(acct_key, balance)
  return balance + tonumber(redis.call('HGET', acct_key, 'held') or '0')
end
