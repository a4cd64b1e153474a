--[[
  keys: n (a batch: each call's KEYS follow the shared ones; the count is sent with the call)
  recount-agents.lua: build an account's live-agent set (what the agent limit counts, lua/lib/
  live-agents.lua) from its agent hashes: for agents created before the set was kept (create-agent.lua
  answers RECOUNT_AGENTS, the caller recounts and retries) and for `ledger:rebuild`, which writes
  the agent hashes back and recounts, so the count is always derived by this one rule: an agent is
  live unless it or an ancestor is revoked or it has expired; a killed one is live.
  The caller lists the account's agents first; the script checks the list is still the set (a
  create in between answers AGENTS_CHANGED: list again), so the count is exact. An expired agent
  not yet released gives its carve back to its parent and is marked `carve_freed`, as
  release-expired.lua does for the ones the set held.

  The number of KEYS is 2 + the account's agents:
  KEYS[1] the account's agent set   {s}:agents:<acct>
  KEYS[2] the live-agent set        {s}:live-agents:<acct>
  and KEYS[2 + i] the i-th agent's hash {s}:agent:<acct>:<ARGV[2 + i]>

  ARGV[1] now, epoch ms
  ARGV[2] '1' to replace a set that exists (ledger:rebuild), '0' to build only a missing one
  ARGV[2 + i] the i-th agent's id

  Returns {OK, live agents} | {ALREADY_APPLIED, live agents} (the set exists) | {AGENTS_CHANGED, 0}
]]

--@include budget

--@include live-agents

--@include status
local now, force = tonumber(ARGV[1]), ARGV[2] == '1'
local n = #KEYS - 2

if not force and redis.call('EXISTS', KEYS[2]) == 1 then return {S_ALREADY_APPLIED, live_count(KEYS[2], now)} end
if redis.call('SCARD', KEYS[1]) ~= n then return {S_AGENTS_CHANGED, 0} end
local rows, revoked, keyOf = {}, {}, {}
for i = 1, n do
  local id = ARGV[2 + i]
  if redis.call('SISMEMBER', KEYS[1], id) == 0 then return {S_AGENTS_CHANGED, 0} end
  -- state, expires, chain; no token: listed but never written (readAgentRows skips it too).
  local a = redis.call('HMGET', KEYS[2 + i], 'token', 'state', 'expires', 'chain', 'parent', 'budget', 'spent_total', 'carve_freed')
  if a[1] then rows[#rows + 1] = {id, a, KEYS[2 + i]} end
  if a[2] == 'revoked' then revoked[id] = true end
  keyOf[id] = KEYS[2 + i]
end
-- An expired agent leaves the set; what it still held against its parent goes back to the parent
-- here too, once (the rule of release-expired.lua: an agent left out of the set is never listed
-- there, and ledger:rebuild marks the ones it did not count).
for _, r in ipairs(rows) do
  local a = r[2]
  if a[3] and tonumber(a[3]) <= now and not a[8] then
    if a[5] and keyOf[a[5]] then redis.call('HINCRBY', keyOf[a[5]], 'carved', 0 - carve_of(a[2], a[6], a[7], a[8])) end
    redis.call('HSET', r[3], 'carve_freed', '1')
  end
end

redis.call('DEL', KEYS[2])
redis.call('ZADD', KEYS[2], '+inf', LIVE_MARK)
for _, r in ipairs(rows) do
  local id, a = r[1], r[2]
  local live = not revoked[id]
  for ancestor in string.gmatch(a[4] or '', '[^,]+') do
    if revoked[ancestor] then live = false end
  end
  if live and (not a[3] or tonumber(a[3]) > now) then redis.call('ZADD', KEYS[2], a[3] or '+inf', lineage(id, a[4])) end
end
return {S_OK, live_count(KEYS[2], now)}
