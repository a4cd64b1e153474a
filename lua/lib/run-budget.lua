-- Run budgets (docs/api.md §13c): the debit's part, after lib/hash-memo.lua (it opens, checks and charges a run);
-- refund.lua and settle.lua give a run back what its call did not keep (lib/run-release.lua).
-- A run is a ceiling over the calls that carry its id: its hash holds `id`, `agent` (the agent that
-- opened it), `chain` (that agent's ancestors), `max`, `spent`, `opened` and `expires` (epoch ms).
-- It holds nothing of the agent's credits (a sub-agent's carve only bounds the budgets handed out,
-- never the parent's own spend), so its end releases its unspent rest by admitting nothing more.
-- A call of the agent or of any descendant may carry it; another agent's call is refused.
-- The scripts touch the run's keys only when the call names one: an absent run's slots repeat a
-- key the script has already (as the chain's unused slots do), so a call without one reads nothing more.

-- run_of and run_charge are made only where a call may name a run (a batch, or a plain call whose
-- ARGV[24] names one): each function a plain debit makes costs it ~700 instructions.
local names_run = hash_memo or ARGV[24] ~= nil

-- The run a call names, read before the checks: {id, max, spent, expires, fresh} with the numbers
-- parsed, or a refusal reason ('ended' | 'other_agent') and the run. `ids`: the caller's ancestors.
local run_of = names_run and function(key, run_id, max, ttl_ms, agent_id, ids, now)
  local r = redis.call('HMGET', key, 'agent', 'max', 'spent', 'expires')
  if not r[1] then
    return {id = run_id, max = tonumber(max), spent = 0, expires = now + tonumber(ttl_ms), fresh = true}
  end
  local run = {id = run_id, max = tonumber(r[2]), spent = tonumber(r[3] or '0'), expires = tonumber(r[4])}
  if run.expires <= now then return run, 'ended' end
  if r[1] == agent_id then return run end
  for _, id in ipairs(ids) do
    if id == r[1] then return run end
  end
  return run, 'other_agent'
end

-- The debit's writes for a run: opened by its first call (listed in the account's index, kept
-- `keep_ms` past its end), its spend raised by the price, and the call record names it so that a
-- refund or a settle gives it back. Old ids leave the index once their records are gone.
local RUN_TTL_MAX_MS = 604800000
local run_charge = names_run and function(key, index, call_key, run, price_s, agent_id, chain, now, keep_ms)
  if run.fresh then
    local price = tonumber(price_s)
    redis.call('HSET', key, 'id', run.id, 'agent', agent_id, 'chain', chain, 'max', string.format('%d', run.max),
      'spent', price_s, 'opened', string.format('%d', now), 'expires', string.format('%d', run.expires))
    -- Relative to the app's clock (`now`), not Redis's: every expiry of the scripts is a TTL.
    local kept = string.format('%d', run.expires + keep_ms - now)
    redis.call('PEXPIRE', key, kept)
    redis.call('ZREMRANGEBYSCORE', index, '-inf', string.format('(%d', now - RUN_TTL_MAX_MS - keep_ms))
    redis.call('ZADD', index, string.format('%d', now), run.id)
    -- The index lives as long as its longest-kept record: set when it has no expiry, else only raised.
    if redis.call('PEXPIRE', index, kept, 'NX') == 0 then redis.call('PEXPIRE', index, kept, 'GT') end
    run.spent = price
  else
    run.spent = redis.call('HINCRBY', key, 'spent', price_s)
  end
  redis.call('HSET', call_key, 'run', run.id)
end

-- The run's part of the debit's OK reply: its spend after the debit, its max and its end.
-- Made where run_of is: only a call that names a run replies with one.
local run_reply = names_run and function(run)
  return {run.spent, run.max, run.expires}
end
