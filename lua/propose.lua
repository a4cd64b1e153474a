--[[
  keys: 3
  propose.lua: file a proposal (an agent asks its operator for more room, docs/api.md §11). First the
  account's pending proposals past their expiry move to `expired` (each with its entry and its
  proposal.decided event), then the proposer's pending count is checked against the limit, then
  the new record, its index entry, its outbox entry and the proposal.created event are written.
  What the proposal asks for is checked by the caller (kind, value, the agent's existence) and again
  when it is approved (decide-proposal.lua): filing one changes no policy and moves no money.

  KEYS[1] proposals hash  {s}:props:<acct>     (id → JSON record)
  KEYS[2] pending index   {s}:propq:<acct>     (sorted set, id by expiry, ms)
  KEYS[3] outbox stream   {s}:outbox

  ARGV[1]  now, epoch ms
  ARGV[2]  account id
  ARGV[3]  proposal id
  ARGV[4]  kind: raise_daily_cap | raise_budget | allow | topup
  ARGV[5]  value (credits, or the pattern of an allow)
  ARGV[6]  agent id the proposal is for ('' = the account)
  ARGV[7]  proposed by: an agent id, or 'owner'
  ARGV[8]  reason
  ARGV[9]  expires, epoch ms
  ARGV[10] expires, ISO 8601 (for the event)
  ARGV[11] status URL base ({BASE_URL}/v1/proposals/)
  ARGV[12] most pending proposals per agent (the account's own count as one more "agent")
  ARGV[13] the raise's duration the proposer asks for, seconds ('' or absent = a lasting change;
           docs/api.md §13b): kept on the record as `for_s`, the approval's default

  Returns {OK, version} | {RATE_LIMITED, ms until the proposer's oldest pending one expires}
]]

--@include proposal-entry

--@include status

local now, acct, id, kind, value, agent_id, by, reason = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local expires, expires_iso, status_base, max_pending = tonumber(ARGV[9]), ARGV[10], ARGV[11], tonumber(ARGV[12])

for _, due in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)) do
  local raw = redis.call('HGET', KEYS[1], due)
  if not raw then redis.call('ZREM', KEYS[2], due)
  else
    local rec = cjson.decode(raw)
    if rec.status == 'pending' and not claimed(rec, now) then
      decide_proposal(KEYS[1], KEYS[2], KEYS[3], acct, rec, 'expired', 'expiry', '', now, status_base)
    end
  end
end

-- Bounded: at most max_pending per agent of the account, and the account's own.
local mine, oldest = 0, nil
for _, pid in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  local raw = redis.call('HGET', KEYS[1], pid)
  if raw then
    local rec = cjson.decode(raw)
    if (rec.agent_id or '') == agent_id then
      mine = mine + 1
      if not oldest or rec.expires < oldest then oldest = rec.expires end
    end
  end
end
if mine >= max_pending then return {S_RATE_LIMITED, math.max(1000, oldest - tonumber(now))} end

local rec = {id = id, kind = kind, value = value, by = by, reason = reason, status = 'pending',
  created = tonumber(now), expires = expires, v = 1}
if agent_id ~= '' then rec.agent_id = agent_id end
local for_s = tonumber(ARGV[13] or '')
if for_s then rec.for_s = for_s end
redis.call('HSET', KEYS[1], id, cjson.encode(rec))
redis.call('ZADD', KEYS[2], expires, id)
append_proposal_entry(KEYS[3], acct, rec, now)
local data = {proposal_id = id, kind = kind, value = proposal_value(rec), agent_id = rec.agent_id or cjson.null,
  reason = reason, proposed_by = by, status = 'pending', status_url = status_base .. id, expires_at = expires_iso}
if for_s then data.for_s = for_s end
redis.call('XADD', KEYS[3], '*', 'kind', 'event', 'id', 'evt_' .. id .. '_created', 'acct', acct,
  'type', 'proposal.created', 'at', now, 'data', cjson.encode(data))
return {S_OK, 1}
