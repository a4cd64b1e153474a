--[[
  keys: n (a batch: each call's KEYS follow the shared ones; the count is sent with the call)
  settle.lua: the end of metered calls that kept their charge (docs/api.md §7, docs/metering.md), a batch
  of one shard's calls in one script. The debit reserved the most each request could cost; this
  charges what the provider's usage actually cost and gives the rest of the reservation back, in one
  step, once per call. Given a record, it also files the call as record-calls.lua does (the record
  completed with the charge): one script after the upstream instead of two. A call it files keeps,
  for the short TTL, the bare word `filed` for a call record (a flat call's filed record, which
  record-calls.lua and refund.lua take as filed); one it only settles keeps its record, its state
  `settled` (a hash's with `charged`). The record is read and checked before anything is written.
  Why a batch (issue 14's bench, as record-calls.lua for issue 17): one EVALSHA per call cost more
  than the settle itself — a command for ioredis to build, write and parse, the availability gate's
  promise, a script start in Redis. The app gathers the settles of a shard asked for in one turn of
  its event loop (src/lua/settle.ts) and sends them together. Each call is still settled once.

  The exact cost in micro-credits is input × p_in + cached × p_cached + output × p_out, plus, for
  the tokens written to the provider's prompt cache (Anthropic), cache_write × p_cw +
  cache_write_1h × p_cw1h, at the prices the debit reserved against (on the call record; a record
  without p_cw prices its writes as input, one without p_cw1h as p_cw). The account carries a remainder
  0 ≤ r < 1e6 micro-credits (`mc_rem`): the charge is floor((r + cost) / 1e6) credits and the rest
  is the new r, so nothing is rounded away and nothing is charged twice (two calls of one account
  in a batch: the second reads the remainder the first left). On the owner's lane (the call
  record's `metered` is 'fee:<pct>', docs/api.md §12) the cost is cost × pct / 100, which may end in
  hundredths of a micro-credit: those are carried in `mc_rem_c` (0..99) beside r, the charge being
  floor((100 r + mc_rem_c + cost × pct) / 1e8), all integers. The charge never passes the
  reservation: past it, the reservation is charged, r is kept, and the excess is recorded as
  `uncharged` (micro-credits) on the entry.

  The release (reservation − charge) goes back to the balance and comes off every window the debit
  counted it in: the account's and the agent's spend of the debit's HKT day (a window that expired
  since is left alone, as refund.lua does: an agent's day spend is its hash's `day_spent`, lowered
  only while the hash's `day` is still the call record's `day`). An agent's release also comes off
  its `spent_total` and, along its chain (docs/api.md §8), every ancestor's spent_total and day spend,
  exactly as the debit counted them (lua/lib/budget.lua release_chain's rule, applied by
  lua/lib/release-memo.lua: a hash several calls of the batch release along is read and written once;
  the agent and the chain must be the call record's).

  KEYS[1] outbox stream                {s}:outbox
  KEYS[2] in-flight calls of the shard {s}:inflight
  KEYS[3] shard counters               {s}:stats       (written only for a call that is filed)
  and for the i-th call, at KEYS[3 + o + j], o being the number of keys of the calls before it, 4
  keys (the owner's call), 6 + (its chain's length) (an agent's), and one more when it names a run:
    j = 1  account hash                   {s}:acct:<acct>
    j = 2  call record                    {s}:call:<call_id>  (a string for the common call, a hash
           otherwise: debit.lua, "The call record")
    j = 3  account spend of the call's HKT day  {s}:spent:<acct>:<day>
    j = 4  recent calls list              {s}:calls:<acct>  (written only when the call is filed)
    for an agent's call (its shape says so, below):
    j = 5  the call's agent hash          {s}:agent:<acct>:<agent>  (the record's agent's, or the call fails)
    j = 6  the agent's breaker window of the debit's minute  {s}:brk:<acct>:<agent>:<minute>
           (the shape's minute; with none, the agent hash again)
    j = 7, 8, …  per ancestor, parent first: its hash
    then, when the call names a run (its shape's run), the run's hash  {s}:run:<acct>:<run id>

  ARGV[1] how many recent calls the list keeps (record-calls.lua's ARGV[1])
  ARGV[2] seconds the call record is kept once filed (record-calls.lua's ARGV[2])
  ARGV[3] now, epoch ms: the date of an entry whose call record has no `at` (the entry is dated at
          the debit's instant, below)
  then each call's 7 ARGV, from ARGV[3 + 7(i-1) + j] (each argument or key costs ~800-1,000
  instructions: what most calls leave at its default is one argument, its shape):
    j = 1  call id
    j = 2  account id
    j = 3  input tokens (not cached), j = 4 cached input tokens, j = 5 output tokens
    j = 6  the call record as JSON without its closing brace, nor `charged` and `uncharged`, which
           this script appends ('' = file nothing: the caller runs record-calls.lua, e.g. to store an
           Idempotency-Key answer built from the balance after the settle)
    j = 7  its shape: '' for the common call (the owner's, organic or not filed, usage the
           provider's, no cache writes, no run), else
           `<organic>|<usage>|<agent>|<minute>|<cache writes>|<run>|<chain>`:
             organic  '1' when the call counts as organic (record-calls.lua's), else '0'
             usage    its source: provider | estimated
             agent    '1' for an agent's call (its keys j = 5, 6 given), '' for the owner's (whose
                      record must name no agent)
             minute   the minute (epoch ms / 60000) of key j = 6, from the debit instant ('' = none):
                      the release comes off that window's `credits` only when it is the call
                      record's minute (lua/lib/breaker-window.lua), so the breaker weighs the
                      charge, not the reservation
             cache writes  input tokens written to the cache, `<5-minute lifetime>,<1-hour
                      lifetime>` ('' = none)
             run      the run the call record names ('' = none; docs/api.md §13c): it gets the
                      release back
             chain    the agent's ancestor ids, parent first, joined by ',' ('' = none); it lays
                      out the call's keys, and must be the call record's

  The reservation was a hold, not a ledger entry (debit.lua raised the account's `held`): this
  takes it off `held` and writes the call's one ledger entry, a `debit` of the charge (amount may
  be 0) under the id the debit of a flat call has (`<call>:debit`), with the model, the token
  counts, the micro-credit remainder and the uncharged excess. Its `bal` is the posted balance,
  balance + held, as every entry's is. A call this script files carries it inside its call's
  outbox entry (kind `charged_call`, field `settle`); one it does not file gets it as an entry of
  its own. Readers see the same debit entry either way.

  Outbox: the filed calls of a batch are one entry (kind `packed_charged_calls`, field `c`), a line
  per call in filing order, joined by '\n':
    <call_id>|<organic>|<charged>|<tcw,tcw1h or ''>|<bytes of settle>|<settle>|<record>
  read back by src/write-behind/outbox.ts as each call's plain `charged_call` entry. The settle
  field's byte length makes it unambiguous whatever its target and model hold ('|', '\n'); the
  record, JSON.stringify's, never holds a raw newline and ends the line. A lone filed call keeps
  its plain entry, and the lines collected are written before any other entry of the batch (an
  unfiled call's debit, a `settled_call`), so the stream keeps the calls' order. A `settled_call`
  (a call debited before the hold) is never packed: its refund raises the posted balance, which
  would break the order readers give entries sharing a stream id (balance_after descending).

  Returns one flat array, 5 values per call in order (the i-th call's at 5i - 4 .. 5i):
        OK, balance_after, charged, released, uncharged_micro
      | ALREADY_APPLIED, balance, 0, 0, 0 (settled or refunded before) | NOT_FOUND, 0, 0, 0, 0 (or not metered)
      | an error text, 0, 0, 0, 0 when the chain or run given, or the owner's shape, is not the call
        record's (that call only: nothing of it written)
]]

--@include status

--@include budget

--@include breaker-window

--@include run-release
--@include recent-calls

local MICRO = 1000000
-- KEYS, ARGV, redis, string and type as locals: each global read is a lookup in the globals table, and a
-- call reads them some thirty times.
local KEYS, ARGV, redis, string, type = KEYS, ARGV, redis, string, type
-- Strings the writes can take as given (the TTL, the token counts): a Lua number would be
-- formatted anew for every command it is passed to.
local keep, settled_ttl = tonumber(ARGV[1]), ARGV[2]
local PER = 7
-- (A decimal string the debit or the app wrote is made a number by `s + 0`, which parses it once:
-- tonumber parses it twice, lua_isnumber then lua_tonumber, each a strtod.)

-- A release of a day spend, in one command where EXISTS + DECRBY were: a day spend the debit left
-- expires (every writer sets its TTL), so a DECRBY that made a key without one made it from nothing
-- (the day had expired), and it goes again.
local function release_day(key, amount, amount_s)
  if redis.call('DECRBY', key, amount_s) == -amount and redis.call('TTL', key) == -1 then redis.call('DEL', key) end
end
-- Integers formatted once a batch: a charge, a release, a held amount or a line's length repeats
-- from call to call, and a string.format costs ~1,800 instructions (a balance or a remainder, new
-- each call, is formatted directly).
local formatted = {[0] = '0'}
-- Called on a miss: `formatted[v] or int_s(v)` (a Lua call costs ~500 instructions, a hit ~100).
local function int_s(v)
  local s = string.format('%d', v)
  formatted[v] = s
  return s
end
local n = (#ARGV - 3) / PER
if n ~= math.floor(n) then return redis.error_reply('settle: ' .. #ARGV .. ' args') end
-- The keys the shapes lay out, checked before the first write.
local want = 3
-- Each call's shape read once, here: false for the common call (its shape ''), else a table of its
-- organic, usage, agent ('1' or ''), minute, cache writes, run, chain and the chain's ids.
local shapes = {}
local NO_IDS = {}
-- A call record that holds nothing a settle is for (none, filed, flat, damaged): read only.
local NO_CALL = {}
-- A metered string record's part from p_in on (its prices, the model and the target: the same for the
-- calls of a model and target), parsed once a batch: {p_in, p_cached, p_out, p_cw, p_cw1h, model,
-- target}, false when damaged.
local tails = {}
-- The accounts the batch settles more than one call of (true), each of the rest false.
local shared = {}
-- The agents' and ancestors' hashes more than one call of the batch releases along (lib/release-memo.lua).
local agent_seen, busy = {}, {}
for i = 1, n do
  local a = 2 + PER * (i - 1)
  local shape = ARGV[a + 8]
  if shape == '' then
    shapes[i] = false
    want = want + 4
  else
    local organic, usage, agent, minute, cw, run, chain = string.match(shape, '^([01])|([^|]*)|(1?)|(%d*)|([^|]*)|([^|]*)|(.*)$')
    if not organic then return redis.error_reply('settle: call ' .. i .. ' has the shape ' .. shape) end
    local ids = chain == '' and NO_IDS or chain_ids(chain)
    shapes[i] = {organic, usage, agent, minute, cw, run, chain, ids}
    if agent == '1' then
      -- Its agent's hash at KEYS[want + 5], its ancestors' from KEYS[want + 7].
      for m = 0, #ids do
        local h = KEYS[want + (m == 0 and 5 or 6 + m)]
        if h then
          if agent_seen[h] then busy[h] = true end
          agent_seen[h] = true
        end
      end
    end
    want = want + (agent == '1' and 6 or 4) + #ids + (run ~= '' and 1 or 0)
  end
  shared[ARGV[a + 3]] = shared[ARGV[a + 3]] ~= nil
end
if want ~= #KEYS then return redis.error_reply('settle: ' .. #KEYS .. ' keys, the shapes lay out ' .. want) end
local out = {}
local k = 3
-- The in-flight members of the calls settled, taken out by one ZREM after the loop (as record-calls.lua).
local landed = {}
-- A busy account's calls, when the batch holds several: its row read by one HMGET and written by one
-- HSET after the loop, each of its day spends released by one DECRBY, its list pushed by one LPUSH.
-- A call sees the earlier calls' writes in `rows` (nothing but this script runs meanwhile). An
-- account with one call in the batch reads and writes as it goes: these tables cost more than they
-- save for it.
local rows, row_keys, day_release, day_keys = {}, {}, {}, {}
-- The balance a call settled or refunded before answers: the row's, while the batch holds it.
local function balance_of(acct)
  local row = rows[acct]
  return row and row.balance or tonumber(redis.call('HGET', acct, 'balance') or '0')
end
-- The i-th call's reply, 5 values at out[5i - 4 .. 5i] (one flat array for the batch: a table a call
-- cost ~1,400 instructions): a status, or an error text for that call alone, then its numbers.
local function answer(i, status, balance)
  local o = 5 * i
  out[o - 4], out[o - 3], out[o - 2], out[o - 1], out[o] = status, balance, 0, 0, 0
end
-- The filed calls' lines of the batch's one outbox entry: one XADD where there was one a call (each
-- cost Redis ~6,000 instructions), 4 slots a line (its head up to the settle field, '|', the
-- record, '\n'). A batch of one call makes no line: it writes its plain entry, as does a batch whose
-- run of filed calls between two other entries is one call (its settle cut from its line's head).
local lined = n > 1
local packed, filed = {}, 0
local lone_id, lone_organic, lone_charged, lone_cw, lone_settle, lone_record, lone_at
local function flush_filed()
  if filed == 1 then
    if lined then lone_settle, packed = string.sub(packed[1], lone_at + 1), {} end
    if lone_cw ~= '' then
      local tcw, tcw1h = string.match(lone_cw, '^([^,]+),(.+)$')
      redis.call('XADD', KEYS[1], '*', 'kind', 'charged_call', 'id', lone_id .. ':call', 'organic', lone_organic, 'charged', lone_charged, 'rec', lone_record, 'settle', lone_settle,
        'tcw', tcw, 'tcw1h', tcw1h)
    else
      redis.call('XADD', KEYS[1], '*', 'kind', 'charged_call', 'id', lone_id .. ':call', 'organic', lone_organic, 'charged', lone_charged, 'rec', lone_record, 'settle', lone_settle)
    end
  elseif filed > 1 then
    packed[#packed] = nil   -- the last '\n'
    redis.call('XADD', KEYS[1], '*', 'kind', 'packed_charged_calls', 'c', table.concat(packed))
    packed = {}
  end
  filed = 0
end

for i = 1, n do
  local a = 2 + PER * (i - 1)
  local call_id, account_id = ARGV[a + 2], ARGV[a + 3]
  -- The token counts, a '0' (most cached counts) never parsed; inline, as a Lua call costs ~500 instructions.
  local s_in, s_cached, s_out = ARGV[a + 4], ARGV[a + 5], ARGV[a + 6]
  local t_in, t_cached, t_out = s_in == '0' and 0 or s_in + 0, s_cached == '0' and 0 or s_cached + 0, s_out == '0' and 0 or s_out + 0
  local head = ARGV[a + 7]
  -- The common call's shape: the owner's, organic (read only when filed), the provider's usage.
  local organic, usage, owner, minute, cw, run_id, chain, ids = '1', 'provider', true, '', '', '', '', NO_IDS
  local shape = shapes[i]
  if shape then
    organic, usage, owner, minute, cw, run_id, chain, ids = shape[1], shape[2], shape[3] == '', shape[4], shape[5], shape[6], shape[7], shape[8]
  end
  -- The cache writes, '' for none.
  local cw_s, cw1h_s, t_cw, t_cw1h = '0', '0', 0, 0
  if cw ~= '' then
    cw_s, cw1h_s = string.match(cw, '^([^,]+),(.+)$')
    t_cw, t_cw1h = cw_s + 0, cw1h_s + 0
  end
  local acct, call_key, acct_day, list = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4]
  k = k + 4
  local agent_hash, breaker
  if not owner then
    agent_hash, breaker = KEYS[k + 1], KEYS[k + 2]
    k = k + 2
  end
  local chain_at = k   -- the ancestors' hashes follow, at KEYS[chain_at + 1 ..]
  k = k + #ids
  local run_key = run_id ~= '' and KEYS[k + 1]
  if run_key then k = k + 1 end

  -- The call record. The common one is a string (debit.lua), read by one GET:
  --   m|metered|state|price|day|at|agent|chain|brk|max_out|clamped|p_in|p_cached|p_out|p_cw|p_cw1h|<bytes of model>|model|target
  -- cut by one match into the places the hash's HMGET gives below, its part from p_in on (the same for
  -- a model and target) parsed once a batch (`metered_s` keeps it, for the state it may rewrite, and
  -- `str_cw`, `str_cw1h` its cache-write prices, '' where none). The bare word
  -- `filed` (this script's or record-calls.lua's) answers ALREADY_APPLIED, a flat call's string, which
  -- no settle is for, NOT_FOUND as a record of no metered call does, and a string no debit writes an
  -- error: each for its call alone, the batch's others settle. A hash (a record with an
  -- Idempotency-Key or a run, or one written before the string) refuses the GET and is read field by
  -- field: each costs ~2,000 instructions (a scan of the record's listpack, a reply string, a Lua
  -- string), so the owner's call never reads the three only an agent's release needs, and `p_cached`
  -- (last) is read only for cached tokens.
  local call, metered_s, str_cw, str_cw1h
  local was_filed, damaged = false, false
  local raw = redis.pcall('GET', call_key)
  if type(raw) == 'string' then
    if raw == 'filed' then
      was_filed, call = true, NO_CALL
    else
      -- The fields by one match, the part from p_in on (`tails`) parsed once a batch. A string the
      -- match does not take is a flat call's, or damaged when it starts as a metered one.
      -- (The owner's call captures only what it reads: each capture is a string made, ~700 instructions.)
      local lane, state, price, day, at, agent, chain_was, brk, tail
      if owner then
        lane, state, price, at, agent, tail = string.match(raw, '^m|([^|]*)|([^|]*)|([^|]*)|[^|]*|([^|]*)|([^|]*)|[^|]*|[^|]*|[^|]*|[^|]*|(.*)$')
      else
        lane, state, price, day, at, agent, chain_was, brk, tail = string.match(raw,
          '^m|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|[^|]*|[^|]*|(.*)$')
      end
      local t = nil
      if tail then
        t = tails[tail]
        if t == nil then
          local p_in, p_cached, p_out, cw_p, cw1h_p, len, model_at = string.match(tail, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|(%d+)|()')
          local model_end = len and model_at + len - 1
          t = false
          if len and string.byte(tail, model_end + 1) == 124 then
            -- The prices as numbers, parsed here once (a string is parsed again by each product).
            t = {tonumber(p_in) or p_in, tonumber(p_cached) or p_cached, tonumber(p_out) or p_out, cw_p, cw1h_p,
              string.sub(tail, model_at, model_end), string.sub(tail, model_end + 2)}
          end
          tails[tail] = t
        end
      end
      if t then
        call = {state, price, agent, t[7], lane, t[6], t[1], t[3], at, '1', false,
          owner and t[2] or chain_was, day, brk, t[2]}
        metered_s, str_cw, str_cw1h = raw, t[4], t[5]
      elseif tail or string.sub(raw, 1, 2) == 'm|' then
        damaged, call = true, NO_CALL
      else
        call = NO_CALL
      end
    end
  elseif raw then
    if owner then
      if t_cached > 0 then call = redis.call('HMGET', call_key, 'state', 'price', 'agent', 'target', 'metered', 'model', 'p_in', 'p_out', 'at', 'hold', 'run', 'p_cached')
      else call = redis.call('HMGET', call_key, 'state', 'price', 'agent', 'target', 'metered', 'model', 'p_in', 'p_out', 'at', 'hold', 'run') end
    elseif t_cached > 0 then call = redis.call('HMGET', call_key, 'state', 'price', 'agent', 'target', 'metered', 'model', 'p_in', 'p_out', 'at', 'hold', 'run', 'chain', 'day', 'brk', 'p_cached')
    else call = redis.call('HMGET', call_key, 'state', 'price', 'agent', 'target', 'metered', 'model', 'p_in', 'p_out', 'at', 'hold', 'run', 'chain', 'day', 'brk') end
  else
    call = NO_CALL
  end
  -- `metered` is '1' on the house lane, 'fee:<pct>' on the owner's (lua/debit.lua).
  local fee = call[5] and call[5] ~= '1' and string.sub(call[5], 1, 4) == 'fee:' and tonumber(string.sub(call[5], 5)) or nil
  if was_filed then
    answer(i, S_ALREADY_APPLIED, balance_of(acct))
  elseif damaged then
    answer(i, 'settle: the call record of ' .. call_id .. ' is damaged', 0)
  elseif not call[1] or (call[5] ~= '1' and not fee) then
    answer(i, S_NOT_FOUND, 0)
  elseif (not owner and call[12] or '') ~= chain then
    answer(i, 'settle: chain ' .. chain .. ' is not the call\'s', 0)
  elseif (call[11] or '') ~= run_id then
    answer(i, 'settle: run ' .. run_id .. ' is not the call\'s', 0)
  elseif owner and call[3] ~= '' then
    answer(i, 'settle: the call is agent ' .. call[3] .. '\'s, not the owner\'s', 0)
  elseif not owner and string.sub(agent_hash, -(#account_id + #(call[3] or '') + 8)) ~= ':agent:' .. account_id .. ':' .. (call[3] or '') then
    -- The agent hash given back to must be the one the record names: the chain alone cannot tell
    -- two top-level agents apart.
    answer(i, 'settle: agent hash ' .. agent_hash .. ' is not the call\'s', 0)
  elseif call[1] ~= 'debited' then
    answer(i, S_ALREADY_APPLIED, balance_of(acct))
  else
    local reserved = call[2] + 0
    -- A price is parsed only when its tokens are not 0.
    local cost = 0
    if t_in > 0 then cost = t_in * call[7] end
    if t_cached > 0 then cost = cost + t_cached * call[owner and 12 or 15] end
    if t_out > 0 then cost = cost + t_out * call[8] end
    -- Read only when there were writes: a field the record lacks (every OpenAI call's) costs a
    -- scan of the whole record.
    if t_cw > 0 or t_cw1h > 0 then
      local p_cw, p_cw1h
      if metered_s then
        p_cw, p_cw1h = str_cw ~= '' and str_cw or nil, str_cw1h ~= '' and str_cw1h or nil
      else
        local p = redis.call('HMGET', call_key, 'p_cw', 'p_cw1h')
        p_cw, p_cw1h = p[1], p[2]
      end
      p_cw = p_cw or call[7]
      cost = cost + t_cw * p_cw + t_cw1h * (p_cw1h or p_cw)
    end
    local many = shared[account_id]
    local row = many and rows[acct]
    local r, held, balance_before, q
    if row then
      if fee and not row.q then row.q = (redis.call('HGET', acct, 'mc_rem_c') or '0') + 0 end
      r, held, balance_before, q = row.r, row.held, row.balance, row.q or 0
    else
      local acc = fee and redis.call('HMGET', acct, 'mc_rem', 'held', 'balance', 'mc_rem_c') or redis.call('HMGET', acct, 'mc_rem', 'held', 'balance')
      r, held, balance_before = (acc[1] or '0') + 0, (acc[2] or '0') + 0, (acc[3] or '0') + 0
      -- The hundredths of a micro-credit a fee's division by 100 leaves (0..99), read and written only
      -- by the owner's lane: the house lane adds whole micro-credits to r, which leave them as they are.
      q = fee and (acc[4] or '0') + 0 or 0
      if many then
        row = {r = r, held = held, balance = balance_before, q = fee and q or false, held_moved = false, q_moved = false}
        rows[acct], row_keys[#row_keys + 1] = row, acct
      end
    end
    -- The hold is debit.lua's (`hold` on the call record); a call debited before the hold existed (a
    -- rolling deploy) has its reservation in the ledger, and its entry is, as then, a refund of the
    -- release. `found`: what of the reservation the account still holds — all of it, unless the
    -- account was restored from the ledger while the call ran (its holds lost with the hash): the
    -- charge then comes out of the balance, never below 0, and what it cannot take is uncharged.
    local hold = call[10] == '1'
    local found, limit = reserved, reserved
    -- (Comparisons, not math.min: a call into C costs a few hundred instructions.)
    if hold then
      if held < reserved then found = held end
      if balance_before + found < reserved then limit = balance_before + found end
    end
    local charged, uncharged
    if fee then
      -- The owner's lane: floor((r + q/100 + cost × fee / 100) / 1e6), counted in hundredths of a
      -- micro-credit so that every number stays an exact integer; the rest is the new r and q.
      local CENTI = MICRO * 100
      local total = r * 100 + q + cost * fee
      charged = math.floor(total / CENTI)
      -- A quotient the division rounded up to the next integer is taken back (integers below 2^53).
      if charged * CENTI > total then charged = charged - 1 end
      if charged > limit then
        charged = limit
        uncharged = math.ceil((cost * fee - limit * CENTI) / 100)
      else
        local rest = total - charged * CENTI
        uncharged, r = 0, math.floor(rest / 100)
        q = rest - r * 100
      end
    else
      -- floor(x) as x - x % 1 (x ≥ 0), with no call into C.
      local x = (r + cost) / MICRO
      charged = x - x % 1
      uncharged = 0
      if charged > limit then
        charged = limit
        uncharged = cost - limit * MICRO
      else
        r = r + cost - charged * MICRO
      end
    end
    -- `released` comes off the windows the debit counted the reservation in; `back` goes to the
    -- balance (the same, unless the hold was lost).
    local released = reserved - charged
    -- Each number goes to the writes as one string, formatted once (a Lua number passed to a command
    -- or joined into a string is formatted anew each time; every value here is an integer).
    local charged_s, released_s, rem_s = formatted[charged] or int_s(charged), formatted[released] or int_s(released), string.format('%d', r)
    local minus_charged_s = charged > 0 and (formatted[-charged] or int_s(-charged)) or '0'

    if head ~= '' then
      -- Filed, the record only guards against a resent settle or filing: the bare word record-calls.lua
      -- leaves a flat call's, with the short TTL, by one SET over the hash (an HSET of the state and its
      -- EXPIRE cost ~6,000 instructions more).
      redis.call('SET', call_key, 'filed', 'EX', settled_ttl)
    elseif metered_s then
      -- Settled, not filed: the string's state, the rest as it was (its `charged` is the entry's).
      redis.call('SET', call_key, 'm|' .. call[5] .. '|settled' .. string.sub(metered_s, #call[5] + #call[1] + 4), 'KEEPTTL')
    else
      redis.call('HSET', call_key, 'state', 'settled', 'charged', charged_s)
    end
    landed[#landed + 1] = account_id .. '|' .. call_id
    -- The balance, the holds and the remainder in one write (or the row's, written after the loop);
    -- `held` and `mc_rem_c` only when the call moved them (one debited before the hold existed has none).
    local balance = balance_before + found - charged
    if fee or hold then held = held - found end
    if row then
      row.balance, row.r = balance, r
      if fee or hold then row.held, row.held_moved = held, true end
      if fee then row.q, row.q_moved = q, true end
    elseif fee then
      redis.call('HSET', acct, 'balance', string.format('%d', balance), 'held', formatted[held] or int_s(held), 'mc_rem', rem_s, 'mc_rem_c', formatted[q] or int_s(q))
    elseif hold then
      redis.call('HSET', acct, 'balance', string.format('%d', balance), 'held', formatted[held] or int_s(held), 'mc_rem', rem_s)
    else
      redis.call('HSET', acct, 'balance', string.format('%d', balance), 'mc_rem', rem_s)
    end
    -- The entry carries the posted balance, balance + the holds still open.
    local posted_s = string.format('%d', balance + held)
    local kind, amount_s = 'debit', minus_charged_s
    if not hold then kind, amount_s = 'refund', released_s end
    if released > 0 then
      -- One command where EXISTS + DECRBY were: a day spend the debit left expires (every writer sets
      -- its TTL), so a DECRBY that made a key without one made it from nothing, and it goes again.
      if not many then
        release_day(acct_day, released, released_s)
      else
        if not day_release[acct_day] then day_release[acct_day], day_keys[#day_keys + 1] = 0, acct_day end
        day_release[acct_day] = day_release[acct_day] + released
      end
      if call[3] ~= '' then
        local hashes = {agent_hash}
        for m = 1, #ids do hashes[m + 1] = KEYS[chain_at + m] end
        release_levels(hashes, call[13], released, busy)
        release_breaker(breaker, agent_hash, minute, call[9], call[14], released_s)
      end
      if run_key then release_run(run_key, released) end
    end
    local uncharged_s = uncharged == 0 and '0' or int_s(uncharged)
    -- The entry is dated at the call's debit (the record's `at`), not at this settle: the daily
    -- windows counted the reservation on the debit's HKT day, and every reader of the ledger (the
    -- console's chart, a rebuild's day spend, the statement) must see the charge on that same day.
    -- A stream reserved at 23:59 HKT and settled at 00:01 was the next day's spend in Postgres.
    local dated = call[9] or ARGV[3]
    if head == '' then
      local entry = {'kind', kind, 'id', call_id .. (hold and ':debit' or ':settle'), 'acct', account_id,
        'agent', call[3], 'amount', amount_s, 'bal', posted_s, 'call', call_id, 'target', call[4], 'at', dated,
        'model', call[6], 'tin', ARGV[a + 4], 'tcached', ARGV[a + 5], 'tout', ARGV[a + 6], 'charged', charged_s,
        'uncharged_micro', uncharged_s, 'usage', usage, 'rem', rem_s}
      if not hold then
        for _, v in ipairs({'ref', call_id .. ':debit', 'reason', 'metered_settle'}) do entry[#entry + 1] = v end
      end
      if t_cw > 0 or t_cw1h > 0 then
        for _, v in ipairs({'tcw', cw_s, 'tcw1h', cw1h_s}) do entry[#entry + 1] = v end
      end
      flush_filed()   -- the calls filed before it go first
      redis.call('XADD', KEYS[1], '*', unpack(entry))
    else
      -- As record-calls.lua files it (same list trim, counters and outbox entry); `uncharged` in
      -- credits, rounded up, as the record has always shown it.
      local record = head .. ',"charged":' .. charged_s .. ',"uncharged":' .. (uncharged == 0 and '0' or int_s(math.ceil(uncharged / MICRO))) .. '}'
      file_recent(list, record, many, keep)
      if organic == '1' then
        count_organic(charged)
      end
      -- The debit entry rides in the call entry: one stream entry per metered call instead of two
      -- (issue 14's bench: the second XADD was a ninth of this script, and one more entry for the
      -- flusher to read, parse and ack). `settle` holds the values of the debit XADD above that the
      -- call entry does not imply, joined by '|'; the target and the model come last, the target's
      -- byte length before them, as either may hold a '|'. The one parser expands it back into
      -- that debit entry, field for field (src/write-behind/outbox.ts). Its own kind, `charged_call`
      -- (the `settled_call` of before the hold packed a refund of the release), so that a flusher
      -- that does not know it (a rolling deploy) dead-letters it, to be replayed once upgraded,
      -- instead of filing the call and silently dropping its ledger row.
      local target_length = formatted[#call[4]] or int_s(#call[4])
      -- The cache writes, when there were any, as fields of their own beside `settle` (whose
      -- layout a flusher of before them reads; it leaves them out of the row, the amount still right).
      local writes = t_cw > 0 or t_cw1h > 0
      local cw_line = writes and cw or ''
      -- In a batch of several, a filed call's settle is made as the rest of its line's head (`pre_len`
      -- bytes before it: call id, organic, charged, cache writes, the settle's byte length summed from
      -- its parts): one string, where the settle and 14 table slots were. One concatenation each
      -- (one string made), not a table and table.concat, nor the head made apart.
      local settle, pre_len
      if lined and hold then
        local bytes = #account_id + #call[3] + #amount_s + #posted_s + #rem_s + #uncharged_s + #s_in + #s_cached + #s_out + #usage + #dated +
          #target_length + #call[4] + #call[6] + 13
        local bytes_s = formatted[bytes] or int_s(bytes)
        pre_len = #call_id + #organic + #charged_s + #cw_line + #bytes_s + 5
        settle = call_id .. '|' .. organic .. '|' .. charged_s .. '|' .. cw_line .. '|' .. bytes_s .. '|' ..
          account_id .. '|' .. call[3] .. '|' .. amount_s .. '|' .. posted_s .. '|' .. rem_s .. '|' .. uncharged_s .. '|' ..
          s_in .. '|' .. s_cached .. '|' .. s_out .. '|' .. usage .. '|' .. dated .. '|' .. target_length .. '|' ..
          call[4] .. '|' .. call[6]
      else
        pre_len = 0
        settle = account_id .. '|' .. call[3] .. '|' .. amount_s .. '|' .. posted_s .. '|' .. rem_s .. '|' .. uncharged_s .. '|' ..
          s_in .. '|' .. s_cached .. '|' .. s_out .. '|' .. usage .. '|' .. dated .. '|' .. target_length .. '|' ..
          call[4] .. '|' .. call[6]
      end
      if hold then
        -- A line of the batch's entry (header above); the cache writes as the shape gave them.
        filed = filed + 1
        if filed == 1 then
          lone_id, lone_organic, lone_charged, lone_cw, lone_record, lone_at = call_id, organic, charged_s, cw_line, record, pre_len
          if not lined then lone_settle = settle end
        end
        if lined then
          local p = #packed
          packed[p + 1], packed[p + 2], packed[p + 3], packed[p + 4] = settle, '|', record, '\n'
        end
      else
        flush_filed()
        if writes then
          redis.call('XADD', KEYS[1], '*', 'kind', 'settled_call', 'id', call_id .. ':call', 'organic', organic, 'charged', charged_s, 'rec', record, 'settle', settle,
            'tcw', cw_s, 'tcw1h', cw1h_s)
        else
          redis.call('XADD', KEYS[1], '*', 'kind', 'settled_call', 'id', call_id .. ':call', 'organic', organic, 'charged', charged_s, 'rec', record, 'settle', settle)
        end
      end
    end
    local o = 5 * i
    out[o - 4], out[o - 3], out[o - 2], out[o - 1], out[o] = S_OK, balance, charged, released, uncharged
  end
end
flush_filed()
for _, key in ipairs(row_keys) do
  local row = rows[key]
  local fields = {'balance', string.format('%d', row.balance)}
  if row.held_moved then fields[3], fields[4] = 'held', formatted[row.held] or int_s(row.held) end
  fields[#fields + 1], fields[#fields + 2] = 'mc_rem', string.format('%d', row.r)
  if row.q_moved then fields[#fields + 1], fields[#fields + 2] = 'mc_rem_c', formatted[row.q] or int_s(row.q) end
  redis.call('HSET', key, unpack(fields))
end
for _, key in ipairs(day_keys) do release_day(key, day_release[key], string.format('%d', day_release[key])) end
release_flush()
push_recent(keep)
if #landed > 0 then redis.call('ZREM', KEYS[2], unpack(landed)) end
write_organic(KEYS[3])
return out
