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
  An approval with a duration (ARGV[11], docs/api.md §13b) is a temporary raise: the field takes the
  proposal's value until now + duration and the base it held is kept beside it (lib/raises.lua);
  the record gets `lapses`. A top-level agent's budget may be raised so here too (a sub-agent's
  budget is carved from its parent's: only the lasting path of PUT /v1/policies moves it). An
  approval without one is a lasting change and ends a raise of the same field, except that a
  lasting `allow` during a raise of the list adds its pattern to the base as well.

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
  ARGV[11] approve: the raise's duration, ms ('' or absent = a lasting change)
  ARGV[12] approve with a duration: when it lapses, ISO 8601 (for the event)

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

--@include raises

--@include status

local now, acct, id, action, via, note, status_base = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local token, lease, max_patterns = ARGV[8], tonumber(ARGV[9]), tonumber(ARGV[10])
local for_ms, lapses_iso = tonumber(ARGV[11] or ''), ARGV[12]

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
local lapses = for_ms and tonumber(now) + for_ms or nil
-- The field's new value: until `lapses` (a raise), or for good (ending a raise of the field).
local function apply(key, field, new)
  if lapses then
    start_raise(key, field, new, lapses, id)
    rec.lapses = lapses
  else
    redis.call('HSET', key, field, new)
    end_raise(key, field)
  end
end
if rec.agent_id then
  settle_raises(KEYS[4], now)
  local a = redis.call('HMGET', KEYS[4], 'token', 'state', 'allow', 'parent', 'raises')
  if not a[1] then return {S_NOT_FOUND, 'agent'} end
  if a[2] == 'revoked' then return {S_AGENT_REVOKED, 0} end
  local field, new
  if rec.kind == 'raise_daily_cap' then field, new = 'daily_cap', rec.value
  elseif rec.kind == 'raise_budget' and lapses then
    if a[4] then return redis.error_reply('decide-proposal: a sub-agent\'s budget is not raised for a time') end
    field, new = 'budget', rec.value
  elseif rec.kind == 'allow' then
    if not allowed(redis.call('HGET', KEYS[3], 'allow'), rec.value) then return {S_DENIED_ACCOUNT_ALLOWLIST, 0} end
    -- A lasting pattern during a raise of the list goes into the list that stays (its base) too.
    local rs = not lapses and a[5] and cjson.decode(a[5])
    local raised = rs and rs.allow
    local lasting = raised and raised.base or a[3]
    -- No list of its own (everything the account allows), or a pattern of it already covers this one.
    if allowed(a[3], rec.value) and allowed(lasting, rec.value) then changed = 0
    else
      local function plus(list) return list == '' and rec.value or list .. '\n' .. rec.value end
      field, new = 'allow', a[3]
      if not allowed(a[3], rec.value) then
        local n = 0
        for _ in string.gmatch(a[3], '[^\n]+') do n = n + 1 end
        if n >= max_patterns then return {S_LIMIT_REACHED, max_patterns} end
        new = plus(a[3])
      end
      if raised then
        raised.base = allowed(lasting, rec.value) and lasting or plus(lasting)
        raised.value = new
        redis.call('HSET', KEYS[4], 'allow', new, 'raises', cjson.encode(rs))
        field = nil
      end
    end
  else return redis.error_reply('decide-proposal: ' .. tostring(rec.kind) .. ' is not approved here') end
  if changed == 1 then
    if field then apply(KEYS[4], field, new) end
    local v = redis.call('HINCRBY', KEYS[4], 'v', 1)
    append_agent_entry(KEYS[4], KEYS[5], acct, rec.agent_id, v, now)
  end
else
  if rec.kind ~= 'raise_daily_cap' then return redis.error_reply('decide-proposal: ' .. tostring(rec.kind) .. ' needs an agent') end
  if redis.call('HEXISTS', KEYS[3], 'balance') == 0 then return {S_NOT_FOUND, 'account'} end
  settle_raises(KEYS[3], now)
  apply(KEYS[3], 'daily_cap', rec.value)
  local v = redis.call('HINCRBY', KEYS[3], 'policy_v', 1)
  append_account_policy_entry(KEYS[3], KEYS[5], acct, v, now)
end
decide_proposal(KEYS[1], KEYS[2], KEYS[5], acct, rec, 'approved', via, note, now, status_base, rec.lapses and lapses_iso)
return {S_OK, 'approved', changed}
