--[[
  keys: 5
  decide-proposal.lua: the operator's decision on one proposal, checked and written in one script so
  that two operators (or an approve racing a decline) cannot both win: only a pending proposal
  moves, and it moves once. An approval of a policy kind applies the change here too, with the
  checks of PUT /v1/policies (the target exists and is not revoked, the pattern stays within the
  account's allowlist, at most max_patterns patterns) — so an approval can never do what the
  operator could not do directly. A top-up cannot be decided inside Redis (the card processor is
  asked in between): it is claimed first (claim), then approved (finish) once the top-up credited,
  or released (release) when it failed, which leaves it pending. A claim lapses after lease_ms.
  A pending proposal found past its expiry moves to `expired` whatever was asked.

  KEYS[1] proposals hash  {s}:props:<acct>
  KEYS[2] pending index   {s}:propq:<acct>
  KEYS[3] account hash    {s}:acct:<acct>
  KEYS[4] agent hash      {s}:agent:<acct>:<agent>  (the proposal's agent; the owner key when none)
  KEYS[5] outbox stream   {s}:outbox

  ARGV[1]  now, epoch ms
  ARGV[2]  account id
  ARGV[3]  proposal id
  ARGV[4]  action: approve | decline | expire | claim | finish | release
  ARGV[5]  via: api | chat (named in the event)
  ARGV[6]  note ('' = none)
  ARGV[7]  status URL base ({BASE_URL}/v1/proposals/)
  ARGV[8]  claim token (claim, finish, release)
  ARGV[9]  claim lease, ms
  ARGV[10] most patterns in one allowlist

  Returns {OK, status, changed (1 | 0: already so)}
        | {WRONG_STATE, status}  (not pending: approved, declined or expired)
        | {APPLYING, 'pending'}  (an approval's top-up is in flight)
        | {NOT_FOUND, what}      (proposal | agent | account)
        | {AGENT_REVOKED, 0} | {DENIED_ACCOUNT_ALLOWLIST, 0} | {LIMIT_REACHED, max_patterns}
]]

--@include proposal-entry

--@include agent-entry

--@include account-policy-entry

--@include allowlist

--@include status

local now, acct, id, action, via, note, status_base = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local token, lease, max_patterns = ARGV[8], tonumber(ARGV[9]), tonumber(ARGV[10])

local raw = redis.call('HGET', KEYS[1], id)
if not raw then return {S_NOT_FOUND, 'proposal'} end
local rec = cjson.decode(raw)

if action == 'finish' or action == 'release' then
  if rec.status ~= 'pending' then return {S_WRONG_STATE, rec.status} end
  if action == 'release' then
    if rec.claim == token then
      rec.claim = nil
      rec.claim_until = nil
      redis.call('HSET', KEYS[1], id, cjson.encode(rec))
    end
    return {S_OK, 'pending', 0}
  end
  -- The top-up credited: the money moved, so the proposal is approved even if its claim lapsed.
  decide_proposal(KEYS[1], KEYS[2], KEYS[5], acct, rec, 'approved', via, note, now, status_base)
  return {S_OK, 'approved', 1}
end

if rec.status ~= 'pending' then return {S_WRONG_STATE, rec.status} end
if claimed(rec, now) then return {S_APPLYING, 'pending'} end
if tonumber(now) >= rec.expires then
  decide_proposal(KEYS[1], KEYS[2], KEYS[5], acct, rec, 'expired', 'expiry', '', now, status_base)
  return {S_WRONG_STATE, 'expired'}
end
if action == 'expire' then return {S_OK, 'pending', 0} end

if action == 'decline' then
  decide_proposal(KEYS[1], KEYS[2], KEYS[5], acct, rec, 'declined', via, note, now, status_base)
  return {S_OK, 'declined', 1}
end

if action == 'claim' then
  if rec.kind ~= 'topup' and rec.kind ~= 'raise_budget' then return redis.error_reply('decide-proposal: only a topup or a budget is claimed') end
  rec.claim = token
  rec.claim_until = tonumber(now) + lease
  redis.call('HSET', KEYS[1], id, cjson.encode(rec))
  return {S_OK, 'pending', 0}
end

if action ~= 'approve' then return redis.error_reply('decide-proposal: unknown action ' .. tostring(action)) end

-- Policy kinds: the same checks as PUT /v1/policies, then the change and its projection entry.
local changed = 1
if rec.agent_id then
  local a = redis.call('HMGET', KEYS[4], 'token', 'state', 'allow')
  if not a[1] then return {S_NOT_FOUND, 'agent'} end
  if a[2] == 'revoked' then return {S_AGENT_REVOKED, 0} end
  local field, new
  if rec.kind == 'raise_daily_cap' then field, new = 'daily_cap', rec.value
  elseif rec.kind == 'allow' then
    if not allowed(redis.call('HGET', KEYS[3], 'allow'), rec.value) then return {S_DENIED_ACCOUNT_ALLOWLIST, 0} end
    -- No list of its own (everything the account allows), or a pattern of it already covers this one.
    if allowed(a[3], rec.value) then changed = 0
    else
      local n = 0
      for _ in string.gmatch(a[3], '[^\n]+') do n = n + 1 end
      if n >= max_patterns then return {S_LIMIT_REACHED, max_patterns} end
      field, new = 'allow', (a[3] == '' and rec.value or a[3] .. '\n' .. rec.value)
    end
  else return redis.error_reply('decide-proposal: ' .. tostring(rec.kind) .. ' is not approved here') end
  if field then
    redis.call('HSET', KEYS[4], field, new)
    local v = redis.call('HINCRBY', KEYS[4], 'v', 1)
    append_agent_entry(KEYS[4], KEYS[5], acct, rec.agent_id, v, now)
  end
else
  if rec.kind ~= 'raise_daily_cap' then return redis.error_reply('decide-proposal: ' .. tostring(rec.kind) .. ' needs an agent') end
  if redis.call('HEXISTS', KEYS[3], 'balance') == 0 then return {S_NOT_FOUND, 'account'} end
  redis.call('HSET', KEYS[3], 'daily_cap', rec.value)
  local v = redis.call('HINCRBY', KEYS[3], 'policy_v', 1)
  append_account_policy_entry(KEYS[3], KEYS[5], acct, v, now)
end
decide_proposal(KEYS[1], KEYS[2], KEYS[5], acct, rec, 'approved', via, note, now, status_base)
return {S_OK, 'approved', changed}
