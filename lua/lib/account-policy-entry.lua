-- The account's policy fields as an `account_policy` outbox entry of version v (the projection
-- keeps the highest version). Spliced in by `--@include account-policy-entry` wherever the
-- account's policy changes (set-policy.lua, decide-proposal.lua).
local function append_account_policy_entry(acct_key, outbox_key, acct, v, now)
  local a = redis.call('HMGET', acct_key, 'daily_cap', 'allow', 'balance_cap', 'thresholds', 'raises')
  -- A standing temporary raise enters as its base, as in lib/agent-entry.lua.
  if a[5] then
    for f, x in pairs(cjson.decode(a[5])) do a[({ daily_cap = 1, allow = 2 })[f]] = x.base or false end
  end
  local e = {'kind', 'account_policy', 'id', acct .. ':policy:v' .. v, 'acct', acct, 'v', v, 'at', now}
  if a[1] then e[#e + 1] = 'daily_cap'; e[#e + 1] = a[1] end
  if a[2] then e[#e + 1] = 'allow'; e[#e + 1] = a[2] end
  if a[3] then e[#e + 1] = 'balance_cap'; e[#e + 1] = a[3] end
  if a[4] then e[#e + 1] = 'thresholds'; e[#e + 1] = a[4] end
  redis.call('XADD', outbox_key, '*', unpack(e))
end
