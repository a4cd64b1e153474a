--[[
  keys: 17
  debit.lua: the one money decision of a paid request (a capability call or a proxied request).
  Checks, in the order of docs/api.md §6: token, rate limit, agent state, allowlists, idempotency,
  per-call max, agent budget, the run the call names (docs/api.md §13c), agent daily cap, account
  daily cap, unpriced request cap, balance, then the runaway-agent breaker.
  Sub-agents (docs/api.md §8): an agent's checks are made for the agent and for every ancestor on its
  chain (state, expiry, allowlist, per-call max, lifetime budget, daily cap), here, in the same
  round trip, so killing an ancestor stops its whole subtree with no write to the descendants, and
  siblings racing for a parent's last credits are serialised by Redis. The chain is immutable, so
  the caller passes it (cached with the token mapping) and the ancestors' keys come through KEYS;
  the agent hash's own `chain` must agree or the script fails. A debit adds the price to the
  `spent_total` and the day's spend of the agent and of every ancestor, and lowers each ancestor's
  `carved` by what the child on the path now holds less (lua/lib/budget.lua); the call record
  keeps the chain so the refund and the settle give it back along the same path. The rate limit counts every request of a matching token before its state
  is answered, so a killed or revoked token is refused like any other past its limit instead of
  hammering forever. An Idempotency-Key replay passes the same gates as a fresh call (state, rate
  limit, allowlists) before its stored answer is served, and the key is the token's own (KEYS[10]):
  one agent never reads another's answer. Then debits and appends the ledger entry to the shard's
  outbox stream in the same script (transactional outbox), so a debit and its entry can never be
  separated. A metered call's reservation is a hold instead: off `balance`, onto the account's
  `held`, with no entry; its settle (settle.lua) writes its one debit, of the charge. Every entry
  carries the posted balance, balance + held, which the account's entries sum to.
  The breaker (agents only) is the last check: an agent whose credits or identical requests over
  the sliding minute would pass its `breaker` policy (agent hash `brk_credits`, `brk_same`; absent =
  the deployment defaults of ARGV[15..16]; 0 = that rule off) is killed instead of debited: the one
  write a check makes, done in place of the debit (state killed, `kill_reason` breaker, the agent
  entry and an `agent.killed` event), answering AGENT_KILLED with reason breaker.
  Owner events ride the same outbox as `event` entries (src/events/): `balance.low` when this debit
  takes the balance below the alert threshold, `cap.reached` on the first daily-cap refusal of an
  HKT day per account, agent and request cap (marked by `cap_noted`/`reqcap_noted` hash fields),
  `cap.threshold` when this debit's spend crosses a warning level of a cap (lua/lib/thresholds.lua).
  A refusal's only writes are the request counted against the rate limit (the first write, made
  once the token matches: every later answer counts) and, for a cap, its once-a-day mark and event.
  It also flags an auto-refill: the account hash carries `refill_below` (the mandate's threshold,
  present only while auto-refill is enabled; kept by set-mandate.lua), so the flag costs no extra key
  and no extra round trip. The script decides nothing about the refill: reserve-refill.lua does.

  KEYS[1]  account hash                 {s}:acct:<acct>
  KEYS[2]  agent hash                   {s}:agent:<acct>:<agent|_owner>  (never written for the owner)
  KEYS[3]  account spend, this HKT day  {s}:spent:<acct>:<day>
  KEYS[4]  unpriced requests, this day  {s}:reqs:<acct>:<day>
  KEYS[5]  rate window, current minute  {s}:rl:<acct>:<agent>:<window>
  KEYS[6]  rate window, previous minute
  KEYS[7]  call record (for the refund) {s}:call:<call_id>  (a string for the common call, a hash otherwise: below)
  KEYS[8]  outbox stream                {s}:outbox
  KEYS[9]  in-flight calls of the shard {s}:inflight  (zset: `<acct>|<call_id>` by abandon deadline)
  KEYS[10] idempotency record           {s}:idem:<acct>:<agent|_owner>:<key>  (never written without a key)
  KEYS[11] breaker window, this minute  {s}:brk:<acct>:<agent>:<window>  (hash: credits, f:<fingerprint>)
  KEYS[12] breaker window, previous minute
  KEYS[13] the parent's hash            {s}:agent:<acct>:<ancestor 1>  \  the chain, nearest first;
  KEYS[14] the grandparent's hash       {s}:agent:<acct>:<ancestor 2>   | a slot past the chain's
  KEYS[15] the great-grandparent's hash {s}:agent:<acct>:<ancestor 3>  /  length repeats KEYS[2]
  KEYS[16] the run the call names       {s}:run:<acct>:<run id>   \  docs/api.md §13c; both repeat
  KEYS[17] the account's runs           {s}:runs:<acct>           /  KEYS[2] when the call names none
  A slot a call does not use (the idempotency record without a key, an owner's breaker windows, the
  chain past its length, the run) repeats KEYS[2]. Sent alone, the call leaves out such slots at the
  end (src/redis/scripts.ts): KEYS[10..17] may be absent, each a key Redis need not parse.

  An agent's (and each ancestor's) spend of an HKT day is in its own hash: `day` (the HKT day
  number) and `day_spent` (what the agent and its subtree spent that day); its spend today is
  day_spent when day is today, else 0. A debit writes each level with one HSET: spent_total,
  day (today), day_spent, and for an ancestor its new `carved`, all computed from the level's HMGET.
  In a batch (src/redis/batched-scripts.ts) the reads go through lib/hash-memo.lua, once per batch
  for each hash and counter, and each level's HSET, the account's balance and held, the breaker
  window's counts, the rate window's and the day spend's rises and the in-flight ZADD are made once,
  after the batch's last call (a level's of an agent's summed debits: settle_levels, below; `day`
  left out where it holds today); the replies and what is left in Redis are those of the same calls
  one at a time (test/lua/debit-batch.test.ts). The call record (a string for the common call, a
  hash otherwise: "The call record" below) carries `unpriced`, `idem`, `chain` and `brk` only when
  set (absent: '0', '', '', '0' to its readers).

  ARGV[1]  now, epoch ms (from the app's clock, never Redis TIME)
  ARGV[2]  SHA-256 of the presented token
  ARGV[3]  agent id, '' for the owner token
  ARGV[4]  target: a capability slug or proxy:<provider>
  ARGV[5]  price, integer credits >= 0
  ARGV[6]  '1' when the route is unpriced (counts against the daily request cap)
  ARGV[7]  call id (generated by the caller; makes the entry id unique)
  ARGV[8]  rate limit, requests per minute for this token
  ARGV[9]  account daily cap when the account has none of its own
  ARGV[10] TTL in seconds of the day-windowed keys
  ARGV[11] account id (named in the ledger entry)
  ARGV[12] low-balance alert threshold when auto-refill is off (0 = off)
  ARGV[13] abandon deadline, epoch ms: a call neither recorded nor refunded by then was cut off (an
           API crash) and the sweeper refunds it (src/paid-request/sweeper.ts)
  ARGV[14..19] what only some calls need, '' (or absent at the end) where not: an agent's breaker,
           then an unpriced route's cap, then an Idempotency-Key; the owner's priced call without a
           key sends none of them (each argument costs Redis ~1,000 instructions: bench/RESULTS.md)
  ARGV[14] request fingerprint (hash of target and body) for the identical-requests rule, or ''
  ARGV[15] breaker default: credits per minute (0 = off)
  ARGV[16] breaker default: identical requests per minute (0 = off)
  ARGV[17] unpriced daily request cap
  ARGV[18] idempotency fingerprint (method, path and body hash) or '' without a key
  ARGV[19] the raw Idempotency-Key ('' without one), kept so the sweeper can free it
  ARGV[20] the agent's chain: ancestor ids, parent first, joined by ',' ('' for a top-level agent
           or the owner); at most 3
  ARGV[21..23] a metered request (docs/api.md §7, docs/metering.md), absent (or '' in ARGV[21]) for a
           flat one. ARGV[21] what the model always has, one argument (a batch parses it once per
           model, src/lua/debit.ts meterSpec):
             p_in|p_cached|p_out|max_output|min_output|p_bound|p_cw|p_cw1h|fee|model
           the prices in credits per 1M tokens (input, cached input, output), the model's
           max_output, the catalog's min_output, then three prices '' when every input token costs
           `input` (below), the owner's lane's fee ('' on the house lane), the model last (it may
           hold a '|'). ARGV[22] the input bound (tokens, never below the true count), ARGV[23] the
           request's output ceiling ('' or absent = none named). The reservation
           ceil((input_bound × input + ceiling × output) / 1e6) + 1 is then the price every check
           below weighs. With no ceiling named and max_output past what the limits leave (balance,
           per-call max, agent and account daily caps), the largest ceiling that fits (≥ min_output)
           is reserved instead and reported as clamped; when not even min_output fits, min_output
           is weighed and refused by the limit it passes (402 on the balance). The prices go on
           the call record, so the settle (settle.lua) charges what was reserved against, and
           `hold` = 1 (the reservation is in `held`, not in the ledger; a metered string record's
           shape says so).
           p_bound, p_cw, p_cw1h: for a model whose input tokens may cost more than `input` each
           (Anthropic's cache writes), '' when none may: the price each token of the input bound is
           reserved at (in place of `input` in the reservation above), and the prices of a cache
           write with the 5-minute and with the 1-hour lifetime, kept on the call record for the
           settle. '': `input`, all three.
           fee: the owner's lane (docs/api.md §12: the account's vaulted key, which the provider bills
           directly): the fee percent, 0..100, of the exact cost; '' on the house lane (and then
           p_bound, p_cw, p_cw1h may be too). The reservation is then ceil(R × pct / 100), R the house
           lane's reservation above, and the clamp weighs that; the percent goes on the call record
           (`metered` = 'fee:<pct>' where the house lane's is '1') for the settle. At 0 the reservation is 0 (the call is unpriced: ARGV[6]).
  ARGV[24..27] a run budget (docs/api.md §13c, lua/lib/run-budget.lua), absent without one (ARGV[20..23]
           are then all sent, '' where absent): the run id, its max (credits), its TTL (ms) and how
           long its record is kept past its end (ms). The max and TTL count only at its opening.
  ARGV[20..23] may be left out altogether (a flat call without ancestors), and ARGV[21..23] for a
  flat call with ancestors: read as ''; then ARGV[14..19] too, where the call needs none of them. The chain comes first so that a sub-agent's flat call, the
  fleet's common one, sends one argument more than the owner's, not nine.

  A call id that has debited already (its call record exists) answers OK again and writes nothing:
  ioredis resends a script whose reply was lost, and that must never debit twice. A batch checks
  all its calls' records with one EXISTS first (the wrapper): none there, no call of it is a resend
  and none checks its own; a resent batch finds them and every call checks. Alone, a call whose
  record is a string reads it with the rate windows' MGET; any other checks it by EXISTS.

  A flat debit's outbox entry is packed: kind `packed_debit`, field `d` = acct|agent|amount|bal|
  call|at|target, read by src/write-behind/outbox.ts as the `debit` entry (docs/architecture.md).
  In a batch the flat debits' `d`s are collected and written as one entry per outbox, kind
  `packed_debits`, `d` one a line (one alone: `packed_debit`), after the last call or before any other
  entry a later call adds to that outbox (an event, an agent entry), so the stream's order is the calls'.

  Returns, by status (src/lua/debit.ts decodes each into a named result):
    OK                        {OK, balance_after, referrer (account id while its bonus is owed, else ''),
                               account_spent_today, refill_due (1 when balance_after < refill_below),
                               price (the reservation when metered), output ceiling reserved
                               (0 when flat), clamped (1 when the script chose the ceiling)}
                              A resent call id answers the same shape with refill_due 0.
    REPLAY                    {REPLAY, 0, stored_response_json}
    INSUFFICIENT_BALANCE      {INSUFFICIENT_BALANCE, balance, price, refill_due (1 when balance < refill_below),
                               mandate ref or '' (for the enable_url), affordable output ceiling
                               (metered: the largest ≥ min_output that fits, else 0; flat: 0)}
    RATE_LIMITED              {RATE_LIMITED, 0, retry_after_ms, limit}
    AGENT_KILLED              {AGENT_KILLED, 0, reason: kill_reason (operator | breaker), by_ancestor or ''}
    AGENT_REVOKED             {AGENT_REVOKED, 0, reason ('' | expired), by_ancestor or ''}
    DENIED_PER_CALL_MAX       {DENIED_PER_CALL_MAX, balance, per_call_max, price, by_ancestor or ''}
    DENIED_AGENT_BUDGET       {DENIED_AGENT_BUDGET, balance, budget, spent_total, by_ancestor or ''}
    DENIED_AGENT_DAILY_CAP    {DENIED_AGENT_DAILY_CAP, balance, agent_daily_cap, agent_spent_today, by_ancestor or ''}
    DAILY_CAP_REACHED         {DAILY_CAP_REACHED, balance, daily_cap, spent_today}
    REQUEST_CAP_REACHED       {REQUEST_CAP_REACHED, balance, request_cap, requests_today}
    DENIED_AGENT_ALLOWLIST    {DENIED_AGENT_ALLOWLIST, balance, by_ancestor or ''}
    DENIED_RUN_BUDGET         {DENIED_RUN_BUDGET, balance, max, spent, reason (exhausted | ended | other_agent), expires}
                              A call that names a run adds to OK: the run's spent (after it), max, expires.
    DENIED_ACCOUNT_ALLOWLIST  {status, balance}
    UNAUTHORIZED, IDEMPOTENCY_MISMATCH, IDEMPOTENCY_IN_FLIGHT
                              {status, 0}
]]

--@include rate-window
--@include hash-memo
--@include run-budget
-- In a batch, a number of an argument or a field is parsed once for all its calls (they mostly send
-- the same limits and read the same account): a tonumber of a long numeral costs more than a lookup.
-- Alone, a table that grows entry by entry would cost more than it saves. A call's common numbers
-- look the table up in place (`parsed_numbers and parsed_numbers[s] or number_of(s)`): a Lua call
-- costs ~1,000 instructions. Alone, they parse by arithmetic (`s + 0`): Lua 5.1's tonumber(s) is a C
-- call that parses the numeral twice (lua_isnumber, then lua_tonumber), ~2,000 instructions against
-- ~1,000 (bench/RESULTS.md, issue 42, sixth round). Every numeral the app sends is valid; a field
-- read may be nil (absent), so `(f or 0) + 0`.
local number_of = tonumber
local parsed_numbers = hash_memo and {}
if parsed_numbers then
  number_of = function(s)
    local v = parsed_numbers[s]
    if v == nil then
      v = tonumber(s)
      parsed_numbers[s] = v
    end
    return v
  end
end
-- A numeric field as a number, parsed once: the parsed value replaces the string in the reply, which
-- a batch shares among its calls through the memo (each later call skips the parse). Made where
-- summarize is (below): a plain owner's call parses its one number in place.
local num_at = (hash_memo or ARGV[3] ~= '') and function(r, f)
  local v = r[f]
  if v then
    v = v + 0
    r[f] = v
  end
  return v
end
-- The empty list of a call without ancestors or levels (never written).
local NONE = {}
-- In a batch, each chain's ids split once (never written).
local chains = hash_memo and {}
-- In a batch, an integer's '%d' string (the HKT day, a price) made once: a string.format costs ~2,000
-- instructions, and the calls of a batch mostly share both. (Looked up in place: a function the
-- plain script made would cost it more than it saves.)
local formatted = hash_memo and {}
-- Each level of the chain (the agent, then its ancestors nearest first) is the reply of one HMGET
-- whose first fields are the same (F_*): the checks walk the replies as they come, with the
-- level's keys, refusal name and parsed numbers in arrays beside them, instead of a table of
-- named fields per level (building one cost as much Lua work as a command). Fields only a refusal
-- needs (kill_reason) are read when it happens. A level's spend of this HKT day is in its own hash
-- (`day`, `day_spent`: the spend of day `day`), so the read that checks a level also reads it.
local F_STATE, F_EXPIRES, F_DAILY_CAP, F_ALLOW, F_PER_CALL_MAX, F_BUDGET, F_SPENT, F_DAY, F_DAY_SPENT, F_CARVED =
  1, 2, 3, 4, 5, 6, 7, 8, 9, 10
-- An agent's levels: {rows, hashes, bys, budgets, spents, day_spents} and, made by summarize, what
-- the checks weigh first (`stopped`, `expires`, `allow`, `pcm`, `room`, `day_room`): a call that
-- passes them all passes every level, so only a refusal walks the levels. In a batch, each agent's,
-- by its hash's key, made at its first call and summarised again only when a row changed
-- (`levels_epoch`), the HKT day changed or a row has a raise (which lapses by each call's clock).
local levels_of = hash_memo and {}
local levels_epoch = 0
-- In a batch, the credits an agent's calls debited that its levels' rows (the memo's) do not hold
-- yet: `pend` of one levels table at a time (`pend_levels`). Every level of a debit gains the
-- price in spent_total and day_spent and each ancestor whose child on the path has a budget loses
-- it from `carved` (the child's budget check passed, so it held at least the price): sums, so the
-- batch adds them up and writes them into the rows once, before another agent's call reads a row,
-- before the breaker's kill reads the agent's hash, and after the last call (--@batch-end).
local pend_levels = nil
-- Called with `last` after the batch's last call, when nothing reads the memo any more: a level with
-- no other deferred field is then written by its own HSET, without the memo's copy (memo_defer and the
-- wrapper's generic write cost a level ~4,000 instructions more).
local settle_levels = hash_memo and function(last)
  local l = pend_levels
  if not l then return end
  pend_levels = nil
  local p = l.pend
  l.pend = 0
  if p == 0 then return end
  levels_epoch = levels_epoch + 1
  local rows, hashes, budgets, spents, day_spents = l[1], l[2], l[4], l[5], l[6]
  for i = 1, #rows do
    local r = rows[i]
    local carved = i > 1 and budgets[i - 1] and tonumber(r[F_CARVED] or '0') - p
    -- `day` only where it changes: each field of an HSET is a search of the hash's listpack.
    local h = hashes[i]
    if last and not hash_dirty[h] then
      local fmt = string.format
      local spent_s, day_s = fmt('%d', spents[i] + p), fmt('%d', day_spents[i] + p)
      local day = r[F_DAY] ~= l.today and l.today
      if carved and day then redis.call('HSET', h, 'spent_total', spent_s, 'day_spent', day_s, 'carved', fmt('%d', carved), 'day', day)
      elseif carved then redis.call('HSET', h, 'spent_total', spent_s, 'day_spent', day_s, 'carved', fmt('%d', carved))
      elseif day then redis.call('HSET', h, 'spent_total', spent_s, 'day_spent', day_s, 'day', day)
      else redis.call('HSET', h, 'spent_total', spent_s, 'day_spent', day_s) end
    else
      memo_defer(h, F_SPENT, 'spent_total', spents[i] + p, F_DAY_SPENT, 'day_spent', day_spents[i] + p,
        carved and F_CARVED, 'carved', carved, r[F_DAY] ~= l.today and F_DAY, 'day', l.today)
    end
  end
end
--@batch-end settle_levels
-- The levels' numbers as of `today` and `now` (a lapsed raise reads as its base) into `budgets`,
-- `spents` and `day_spents`, and the summary the checks weigh (false where none): whether a row has
-- a raise (the summary then holds for this call only), whether a level is stopped, whether one has
-- an allowlist, the earliest expiry, the least per-call max, and the least room left under a budget
-- and under a daily cap. Made only where a call may have levels: a plain owner's call never makes it.
local summarize = (hash_memo or ARGV[3] ~= '') and function(rows, budgets, spents, day_spents, today, now)
  -- The fields as locals, not the F_* above: each upvalue costs a plain call's making of the function.
  local F_STATE, F_EXPIRES, F_DAILY_CAP, F_ALLOW, F_PER_CALL_MAX, F_BUDGET, F_SPENT, F_DAY, F_DAY_SPENT = 1, 2, 3, 4, 5, 6, 7, 8, 9
  local volatile, stopped, allow, expires, pcm, room, day_room = false, false, false, false, false, false, false
  for i = 1, #rows do
    local r = rows[i]
    local at = i == 1 and 15 or 11   -- where the row holds `raises`
    if r[at] then
      -- Made here, for a row with raises only (lib/raised-row.lua).
--@include raised-row
      raised_row(r, at, now)
      volatile = true
    end
    -- The numeric fields the checks weigh, parsed once per reply: in a batch the reply is shared
    -- (`parsed` marks it; what the script writes into it is a number already). Alone, the mark
    -- would only cost the reply a hash part.
    -- (num_at inlined: a Lua call each cost a level ~1,000 instructions.)
    if not r.parsed then
      local v = r[F_BUDGET]
      if v then r[F_BUDGET] = v + 0 end
      v = r[F_SPENT]
      if v then r[F_SPENT] = v + 0 end
      v = r[F_DAY_SPENT]
      if v then r[F_DAY_SPENT] = v + 0 end
      v = r[F_PER_CALL_MAX]
      if v then r[F_PER_CALL_MAX] = v + 0 end
      v = r[F_DAILY_CAP]
      if v then r[F_DAILY_CAP] = v + 0 end
      if hash_memo then r.parsed = true end
    end
    local b, s = r[F_BUDGET], r[F_SPENT] or 0
    -- A `day` other than today's: the level has spent nothing yet today.
    local d = r[F_DAY] == today and r[F_DAY_SPENT] or 0
    budgets[i], spents[i], day_spents[i] = b, s, d
    local state = r[F_STATE]
    if state == 'revoked' or state == 'killed' then stopped = true end
    local e = r[F_EXPIRES]
    if e then
      e = e + 0
      if not expires or e < expires then expires = e end
    end
    if r[F_ALLOW] then allow = true end
    local m = r[F_PER_CALL_MAX]
    if m and (not pcm or m < pcm) then pcm = m end
    if b and (not room or b - s < room) then room = b - s end
    local c = r[F_DAILY_CAP]
    if c and (not day_room or c - d < day_room) then day_room = c - d end
  end
  return volatile, stopped, allow, expires, pcm, room, day_room
end
-- In a batch: this call's counts in the breaker window `key` of this minute, as HINCRBY would answer
-- them (its credits when `price` > 0, its identical requests under `field` when it has one), kept
-- among the window's deferred fields (read from Redis at its first rise, written after the batch's
-- last call). The window gets its expiry with its first count. One Lua call where two memo_hincr,
-- a memo_put and a memo_pexpire were.
local brk_count = hash_memo and function(key, price, field)
  if price <= 0 and not field then return nil, nil end
  local d = hash_dirty[key]
  if not d then
    d = {}
    hash_dirty[key] = d
  end
  hash_memo[key] = nil   -- this minute is a later call's previous one when its minute is next
  local credits, same
  if price > 0 then credits = d.credits end
  if field then same = d[field] end
  -- What the window held before the batch, both counts by one command where both are first counted.
  if price > 0 and credits == nil and field and same == nil then
    local got = redis.call('HMGET', key, 'credits', field)
    credits, same = tonumber(got[1] or '0'), tonumber(got[2] or '0')
  end
  if price > 0 then
    if credits == nil then credits = tonumber(redis.call('HGET', key, 'credits') or '0') end
    credits = credits + price
    d.credits = credits
  end
  if field then
    if same == nil then same = tonumber(redis.call('HGET', key, field) or '0') end
    same = same + 1
    d[field] = same
  end
  if (credits or price) == price and (same or 1) == 1 then expires[key] = WINDOW_MS * 2 end
  return credits, same
end
--@include status
-- An owner event, on the outbox with the ledger entries (src/events/sink.ts persists it). This and
-- the helpers below take what they need of a call as arguments: made here, once per batch, rather
-- than as a call's closures (an allocation and its collection each, per call).
-- In a batch, the flat debits' packed entries (`d`) by outbox key, written as one entry after the
-- batch's last call (src/redis/batched-scripts.ts); every other XADD to an outbox first writes the
-- ones collected for it (flush_entries), so the stream keeps the order the calls made them.
local debit_entries = nil --@batch-entries
local flush_entries = nil --@batch-entries-flush
local function emit_event(outbox, account_id, at, id, type, data)
  if flush_entries then flush_entries(outbox) end
  redis.call('XADD', outbox, '*', 'kind', 'event', 'id', id, 'acct', account_id, 'type', type,
    'at', at, 'data', cjson.encode(data))
end
-- A cap refusal tells the owner once per HKT day and scope (the mark lives in the hash it limits).
local function note_cap(hash, mark, today, outbox, account_id, at, id, data)
  if redis.call('HGET', hash, mark) == today then return end
  redis.call('HSET', hash, mark, today)
  emit_event(outbox, account_id, at, id, 'cap.reached', data)
end
-- A metered call's reservation for the output ceiling `out` (5b below). The owner's lane charges
-- fee_pct percent of the cost: its reservation is that percent of the house lane's, rounded up,
-- which bounds floor((r + cost × pct / 100) / 1e6) as R bounds the whole.
-- Made only where a call may be metered (each function a plain call makes costs it ~500 instructions).
local reservation_of = (hash_memo or (ARGV[21] or '') ~= '') and function(out, input_bound, p_bound, p_out, fee_pct)
  local r = math.ceil((input_bound * p_bound + out * p_out) / 1000000) + 1
  if not fee_pct then return r end
  return math.floor((r * fee_pct + 99) / 100)
end
-- In a batch: true when none of its calls' records (KEYS[7]) existed before it (the wrapper's one
-- EXISTS of them all, src/redis/batched-scripts.ts): no call of it is then a resent one.
local batch_new = nil --@batch-new 7
-- Above: the libraries, the batch's helpers and the statuses, no call's state. In a batch they are
-- made once for the batch's calls, below this marker once per call (src/redis/batched-scripts.ts);
-- what a call uses of them is an upvalue of its function (Lua allows 60: the debit uses 53).
-- No line of the script writes KEYS or ARGV: in a batch the calls share the wrapper's tables.
--@batch-args-read-only
--@batch-per-call
-- KEYS and ARGV as locals: alone they are globals, and each global read is a lookup in the globals
-- table (the owner's call reads them ~60 times). In a batch they are the call's parameters already.
local KEYS, ARGV = KEYS, ARGV

local now = parsed_numbers and (parsed_numbers[ARGV[1]] or number_of(ARGV[1])) or ARGV[1] + 0
local now_s = ARGV[1]              -- as given, for the writes (a Lua number is formatted anew by each command)
local token_hash = ARGV[2]
local agent_id = ARGV[3]            -- '' = the owner token
local target = ARGV[4]
local price = parsed_numbers and (parsed_numbers[ARGV[5]] or number_of(ARGV[5])) or ARGV[5] + 0
local unpriced = ARGV[6] == '1'
local call_id = ARGV[7]
local rate_limit = parsed_numbers and (parsed_numbers[ARGV[8]] or number_of(ARGV[8])) or ARGV[8] + 0
local default_daily_cap = parsed_numbers and (parsed_numbers[ARGV[9]] or number_of(ARGV[9])) or ARGV[9] + 0
local idem_fp = ARGV[18] or ''      -- ARGV[14..19] may be absent: read as ''
local day_ttl = ARGV[10]
local account_id = ARGV[11]
local req_fp = ARGV[14] or ''
local abandon_at = ARGV[13]
local idem_key = ARGV[19] or ''
-- ARGV[20..23] are absent on the common call (flat, owner or top-level agent), ARGV[21..23] on a
-- sub-agent's flat call: fewer strings to encode and send per call.
local chain = ARGV[20] or ''
local model = ARGV[21] or ''        -- the model's part (5b); '' = a flat-priced request
local metered = model ~= ''
local ids = chain == '' and NONE or (chains and chains[chain])
if not ids then
  -- Made here, where a chain is split (a call without ancestors makes no function for it).
--@include chain-ids
  ids = chain_ids(chain)
  if hash_memo then chains[chain] = ids end
end
if #ids > 3 then return redis.error_reply('debit: a chain of ' .. #ids .. ' ancestors') end
local DAY_MS, HKT_OFFSET_MS = 86400000, 28800000
local day = math.floor((now + HKT_OFFSET_MS) / DAY_MS)   -- the HKT day of the daily caps

local agent_ref = agent_id ~= '' and agent_id or cjson.null

-- 1. token
-- (memo_of inlined for the rows every call reads: a Lua call costs ~1,000 instructions.)
local memo = hash_memo and hash_memo[KEYS[1]]
local acct = memo and memo.account or memo_hmget(KEYS[1], 'account', 'owner', 'balance', 'daily_cap', 'allow', 'referrer', 'refill_below', 'held', 'thresholds', 'raises')
if not acct[2] then return {S_UNAUTHORIZED, 0} end
if acct[9] then   -- a lapsed temporary raise reads as its base (lib/raises.lua)
--@include raised-row
  raised_row(acct, 9, now)
end
local balance = num_at and num_at(acct, 2) or acct[2] + 0
-- Alone, both rate windows and the account's spend of this HKT day in one MGET, not three GETs: each
-- redis.call costs the script a few thousand instructions (bench/RESULTS.md, issue 42). In a batch
-- the memo reads each once per batch. Nothing writes them before the rate limit weighs them.
-- A call whose record is a string (a flat call without an Idempotency-Key, an unpriced route or a
-- run: the call record, below) reads its record in the same MGET, for the resend check next.
local string_record = not (metered or unpriced) and idem_key == '' and (KEYS[16] == nil or KEYS[16] == KEYS[2])
local got, got_record = nil, false
if not hash_memo then
  got_record = not batch_new and string_record
  if got_record then got = redis.call('MGET', KEYS[5], KEYS[6], KEYS[3], KEYS[7])
  else got = redis.call('MGET', KEYS[5], KEYS[6], KEYS[3]) end
end
-- The same call id again: the client resent this script after losing its reply (a dropped
-- connection, a Redis restart). It has debited already: answer OK, write nothing. (A string
-- record stays a string while it exists: the filing and the refund SET it.)
if not batch_new and (got_record and got[4] or not got_record and redis.call('EXISTS', KEYS[7]) == 1) then
  local spent_today = got and (got[3] or 0) + 0 or memo_count(KEYS[3])
  -- The common record is a string (below): a flat call's state|price|…, a metered one's m|metered|
  -- state|price|… with its max_out and clamped after the flat fields; any other a hash.
  local record = got_record and got[4] or redis.call('TYPE', KEYS[7]).ok == 'string' and redis.call('GET', KEYS[7])
  if record then
    if string.sub(record, 1, 2) == 'm|' then
      local was_price, was_out, was_clamped = string.match(record, '^m|[^|]*|[^|]*|([^|]*)|[^|]*|[^|]*|[^|]*|[^|]*|[^|]*|([^|]*)|([^|]*)|')
      return {S_OK, balance, acct[5] or '', spent_today, 0, tonumber(was_price or '0'), tonumber(was_out or '0'), tonumber(was_clamped or '0')}
    end
    return {S_OK, balance, acct[5] or '', spent_today, 0, tonumber(string.match(record, '^[^|]*|([^|]*)') or '0'), 0, 0}
  end
  local was = redis.call('HMGET', KEYS[7], 'price', 'max_out', 'clamped')
  return {S_OK, balance, acct[5] or '', spent_today, 0,
    tonumber(was[1] or '0'), tonumber(was[2] or '0'), tonumber(was[3] or '0')}
end
-- The fields of a level's row (F_* above), again as this call's locals: a call's function may use
-- at most 60 upvalues (Lua 5.1), and these would be ten of them.
local F_STATE, F_EXPIRES, F_DAILY_CAP, F_ALLOW, F_PER_CALL_MAX, F_CARVED = 1, 2, 3, 4, 5, 10
local agent = nil
-- In a batch, the agent's levels table (below) once a call of it made one: its first row is the
-- agent's row of the memo (the same table), so a later call takes it from there.
local levels = nil
if agent_id == '' then
  if acct[1] ~= token_hash then return {S_UNAUTHORIZED, 0} end
else
  levels = hash_memo and levels_of[KEYS[2]]
  -- Another agent's debits not yet in the rows this call may read (one of its levels may be this
  -- agent's or an ancestor's): written first. (A call without the memo is another account's.)
  if pend_levels ~= levels and pend_levels and hash_memo then settle_levels() end
  if levels then agent = levels[1][1]
  else
    memo = hash_memo and hash_memo[KEYS[2]]
    agent = memo and memo.agent or memo_hmget(KEYS[2], 'agent', 'state', 'expires', 'daily_cap', 'allow', 'per_call_max', 'budget',
      'spent_total', 'day', 'day_spent', 'carved', 'token', 'brk_credits', 'brk_same', 'chain', 'raises')
  end
  if agent[11] ~= token_hash then return {S_UNAUTHORIZED, 0} end
  if (agent[14] or '') ~= chain then return redis.error_reply('debit: chain ' .. chain .. ' is not the agent\'s') end
end
-- rows[1] is the agent's, rows[i + 1] the ancestor ids[i]'s (hash KEYS[12 + i]); `bys` names an
-- ancestor in refusals ('' for the agent itself); `budgets` (false without one), `spents` and
-- `day_spents` are the lifetime budget, spent_total and this HKT day's spend as numbers, and
-- `pend` what the batch's calls of this agent debited since (settle_levels): each level has spent
-- spents[i] + pend, spent today day_spents[i] + pend.
local today = formatted and formatted[day]
if not today then
  today = string.format('%d', day)
  if formatted then formatted[day] = today end
end
-- The owner has no levels: the shared empty table, read only (a table made and collected per call
-- costs Redis' Lua more than the checks that walk it); an agent's are made at their most levels.
-- The levels are walked by index, never by ipairs: each ipairs step (and the owner's empty walk) is a
-- call of a C function, several per level and check (bench/script-cost.ts).
local rows, hashes, bys, budgets, spents, day_spents = NONE, NONE, NONE, NONE, NONE, NONE
-- The levels' summary (summarize; the owner's: nothing to weigh), and in a batch the agent's levels
-- table (`levels`, above), which keeps it while no row changed.
local pend = 0
local any_stopped, any_allow, first_expiry, least_pcm, least_room, least_day_room = false, false, false, false, false, false
if agent then
  if levels then
    -- A summary holds while no row changed (`epoch`, false for a row with a raise: made anew each
    -- call) on the same HKT day.
    if levels.epoch ~= levels_epoch or levels.today ~= today then
      -- The debits pending from an earlier HKT day are that day's: written before today's are weighed.
      if levels.pend > 0 and levels.today ~= today then settle_levels() end
      local volatile
      volatile, levels.stopped, levels.allow, levels.expires, levels.pcm, levels.room, levels.day_room =
        summarize(levels[1], levels[4], levels[5], levels[6], today, now)
      levels.epoch, levels.today, levels.thr_lowest = not volatile and levels_epoch, today, false
    end
    -- Its arrays are taken where a check walks them (a refusal, a threshold crossed): a call that
    -- passes weighs only the summary.
    pend = levels.pend
    any_stopped, any_allow, first_expiry = levels.stopped, levels.allow, levels.expires
    least_pcm, least_room, least_day_room = levels.pcm, levels.room, levels.day_room
  else
    rows, hashes, bys = {agent, nil, nil, nil}, {KEYS[2], nil, nil, nil}, {'', nil, nil, nil}
    budgets, spents, day_spents = {nil, nil, nil, nil}, {nil, nil, nil, nil}, {nil, nil, nil, nil}
    for i = 1, #ids do
      local a = memo_of and memo_of(KEYS[12 + i], 'ancestor') or memo_hmget(KEYS[12 + i], 'ancestor', 'state', 'expires', 'daily_cap', 'allow', 'per_call_max',
        'budget', 'spent_total', 'day', 'day_spent', 'carved', 'raises')
      if not a[F_STATE] then return redis.error_reply('debit: ancestor ' .. ids[i] .. ' is missing') end
      rows[i + 1], hashes[i + 1], bys[i + 1] = a, KEYS[12 + i], ids[i]
    end
    local volatile
    volatile, any_stopped, any_allow, first_expiry, least_pcm, least_room, least_day_room = summarize(rows, budgets, spents, day_spents, today, now)
    if hash_memo then
      -- Every field made here (false: none yet), so the table is made at its size once.
      levels = {rows, hashes, bys, budgets, spents, day_spents, pend = 0, epoch = not volatile and levels_epoch, today = today,
        stopped = any_stopped, allow = any_allow, expires = first_expiry, pcm = least_pcm, room = least_room,
        day_room = least_day_room, thr_lowest = false, thr_need = false, brk = false}
      levels_of[KEYS[2]] = levels
    end
  end
end

-- 2. rate limit: sliding window over the current and the previous minute. Every request of the
-- token that passes it counts, whatever the later checks decide (a killed token's too).
local weighted, to_window_end
-- Alone, both windows and the day's spend are the MGET's (above).
local day_spent_read = nil
if hash_memo then
  -- The memo holds a counter read or counted this batch as its number: a later call takes both
  -- straight from it (each Lua call costs ~1,000 instructions).
  weighted, to_window_end = rate_weigh(now, hash_memo[KEYS[5]] or memo_count(KEYS[5]), hash_memo[KEYS[6]] or memo_count(KEYS[6]))
else
  weighted, to_window_end = rate_weigh(now, (got[1] or 0) + 0, (got[2] or 0) + 0)
  day_spent_read = (got[3] or 0) + 0
end
if weighted >= rate_limit then
  -- When a request is admitted again (not the window's end, where this minute still weighs in full).
  -- Its functions are made here, by a refusal only.
--@include rate-read
  return {S_RATE_LIMITED, 0, rate_retry_ms(now, KEYS[5], KEYS[6], rate_limit, memo_count), rate_limit}
end
local elapsed = WINDOW_MS - to_window_end   -- the breaker weighs its window the same way
-- In a batch the count is the memo's, written once after the batch's last call.
if hash_memo then memo_incr(KEYS[5], 1, WINDOW_MS * 2) else rate_count(KEYS[5]) end

-- Each check of the levels below weighs the summary first (summarize): only a call it may refuse
-- walks the levels, to find the first that does.
-- 3. agent state: the agent's, then every ancestor's (a stopped ancestor stops its subtree)
if any_stopped or (first_expiry and first_expiry <= now) then
  if levels and rows == NONE then rows, hashes, bys, budgets, spents, day_spents = levels[1], levels[2], levels[3], levels[4], levels[5], levels[6] end
  for i = 1, #rows do
    local r = rows[i]
    local state = r[F_STATE]
    if state == 'revoked' then return {S_AGENT_REVOKED, 0, '', bys[i]} end
    if state == 'killed' then return {S_AGENT_KILLED, 0, redis.call('HGET', hashes[i], 'kill_reason') or 'operator', bys[i]} end
    if r[F_EXPIRES] and tonumber(r[F_EXPIRES]) <= now then return {S_AGENT_REVOKED, 0, 'expired', bys[i]} end
  end
end

-- 4. allowlists: the agent's (and each ancestor's) and the account's must all allow the target
-- (a level without a list allows everything). The matching is made here, where a list is set, with
-- the call's budget of glob steps for all its walks (lib/allowlist.lua).
if any_allow or acct[4] then
--@include allowlist
  if any_allow then
    if levels and rows == NONE then rows, hashes, bys, budgets, spents, day_spents = levels[1], levels[2], levels[3], levels[4], levels[5], levels[6] end
    for i = 1, #rows do
      local r = rows[i]
      if not allowed(r[F_ALLOW], target) then return {S_DENIED_AGENT_ALLOWLIST, balance, bys[i]} end
    end
  end
  if acct[4] and not allowed(acct[4], target) then return {S_DENIED_ACCOUNT_ALLOWLIST, balance} end
end

-- 5. idempotency: a finished key replays its stored answer and charges nothing. After the gates
-- above, so a token that may no longer make this call is not handed its answer either.
if idem_fp ~= '' then
  local idem = redis.call('HMGET', KEYS[10], 'fp', 'state', 'response')
  if idem[1] then
    if idem[1] ~= idem_fp then return {S_IDEMPOTENCY_MISMATCH, 0} end
    if idem[2] ~= 'done' then return {S_IDEMPOTENCY_IN_FLIGHT, 0} end
    return {S_REPLAY, 0, idem[3]}
  end
end

-- 5a. the run the call names (docs/api.md §13c), read only when it names one
local run, run_refused = nil, nil
if KEYS[16] and KEYS[16] ~= KEYS[2] then
  if not agent then return redis.error_reply('debit: a run without an agent') end
  run, run_refused = run_of(KEYS[16], ARGV[24], ARGV[25], ARGV[26], agent_id, ids, now)
  if run_refused then return {S_DENIED_RUN_BUDGET, balance, run.max, run.spent, run_refused, run.expires} end
end

-- The account's spend of this HKT day (a key): the metered clamp and the daily cap weigh it.
-- (Nothing wrote it since the MGET above: every write comes after the checks.)
local account_day_spent = day_spent_read or memo_count(KEYS[3])

-- 5b. metered: the reservation becomes the price (docs/api.md §7). The clamp looks at the same limits
-- the checks below apply, so a ceiling it picks always passes them.
local max_out, clamped, affordable = 0, 0, 0
-- The ceiling as the string the call record takes: the argument it came as, formatted only when clamped.
local max_out_s = nil
-- The model's part of ARGV[21], parsed: in a batch once per model (`formatted`, keyed by the
-- argument: the per-call function has no upvalue to spare for a table of its own).
local meter = nil
if metered then
  meter = formatted and formatted[model]
  if not meter then
    local p_in, p_cached, p_out, model_max, min_out, p_bound, p_cw, p_cw1h, fee, name = string.match(model,
      '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|(.*)$')
    if not name then return redis.error_reply('debit: the model ' .. model) end
    local p_in_n = p_in + 0
    -- Numbers for the reservation, then the strings the call record takes (the prices as the caller
    -- sent them): its lane, and its part from p_in to the model's '|' after it, made once.
    meter = {p_in_n, p_out + 0, model_max + 0, min_out + 0, p_bound == '' and p_in_n or p_bound + 0, fee ~= '' and fee + 0,
      fee ~= '' and 'fee:' .. fee or '1', p_in .. '|' .. p_cached .. '|' .. p_out .. '|' .. p_cw .. '|' .. p_cw1h .. '|' .. #name .. '|' .. name .. '|',
      model_max, min_out, name, p_cached, p_cw, p_cw1h, p_in, p_out}
    if formatted then formatted[model] = meter end
  end
  local p_out, model_max, min_out, p_bound, fee_pct = meter[2], meter[3], meter[4], meter[5], meter[6] or nil
  local input_bound = parsed_numbers and (parsed_numbers[ARGV[22]] or number_of(ARGV[22])) or ARGV[22] + 0
  local asked = ARGV[23] or ''
  if asked ~= '' then
    max_out, max_out_s = parsed_numbers and (parsed_numbers[asked] or number_of(asked)) or asked + 0, asked
    -- reservation_of inline, floor(x) as x - x % 1 (no call into C): a named ceiling is the common call.
    local x = (input_bound * p_bound + max_out * p_out) / 1000000
    price = x - x % 1
    if price < x then price = price + 1 end
    price = price + 1
    if fee_pct then
      x = (price * fee_pct + 99) / 100
      price = x - x % 1
    end
  end
  -- The room the limits leave: what the clamp picks by, and what a refusal by the balance reports
  -- (`affordable`); a named ceiling that the balance covers needs neither.
  if asked == '' or balance < price then
    local room = balance
    -- The levels' least per-call max and room under a budget and a daily cap (summarize).
    if least_pcm and least_pcm < room then room = least_pcm end
    if least_day_room and least_day_room - pend < room then room = least_day_room - pend end
    if least_room and least_room - pend < room then room = least_room - pend end
    local day_room = number_of(acct[3] or default_daily_cap) - account_day_spent
    if day_room < room then room = day_room end
    if run and run.max - run.spent < room then room = run.max - run.spent end
    -- On the owner's lane: ceil(R × pct / 100) <= room  <=>  R <= floor(room × 100 / pct), for an integer R.
    local house_room = room
    if fee_pct and fee_pct > 0 then house_room = math.floor(room * 100 / fee_pct) end
    -- ceil(x / 1e6) + 1 <= room  <=>  x <= (room - 1) × 1e6, for an integer x
    local fits = model_max
    if p_out > 0 and fee_pct ~= 0 then fits = math.floor(((house_room - 1) * 1000000 - input_bound * p_bound) / p_out) end
    if reservation_of(0, input_bound, p_bound, p_out, fee_pct) > room then fits = 0 end
    fits = math.max(0, math.min(fits, model_max))
    if fits >= min_out then affordable = fits end
    if asked ~= '' then
    elseif reservation_of(model_max, input_bound, p_bound, p_out, fee_pct) <= room then max_out, max_out_s = model_max, meter[9]
    elseif affordable > 0 then max_out, clamped = affordable, 1
    else max_out, max_out_s = min_out, meter[10] end   -- not even min_output fits: refused by the limit the smallest ceiling passes
    if asked == '' then price = reservation_of(max_out, input_bound, p_bound, p_out, fee_pct) end
  end
end

-- 6. per-call maximum of the agent and its ancestors
if least_pcm and price > least_pcm then
  if levels and rows == NONE then rows, hashes, bys, budgets, spents, day_spents = levels[1], levels[2], levels[3], levels[4], levels[5], levels[6] end
  for i = 1, #rows do
    local r = rows[i]
    if r[F_PER_CALL_MAX] and price > r[F_PER_CALL_MAX] then
      return {S_DENIED_PER_CALL_MAX, balance, r[F_PER_CALL_MAX], price, bys[i]}
    end
  end
end

-- 6b. lifetime budgets: the agent's and every ancestor's spent_total (which counts its subtree)
if least_room and pend + price > least_room then
  if levels and rows == NONE then rows, hashes, bys, budgets, spents, day_spents = levels[1], levels[2], levels[3], levels[4], levels[5], levels[6] end
  for i = 1, #rows do
    if budgets[i] and spents[i] + pend + price > budgets[i] then
      return {S_DENIED_AGENT_BUDGET, balance, budgets[i], spents[i] + pend, bys[i]}
    end
  end
end

-- 6c. the run: one more level of the chain, below the agent
if run and run.spent + price > run.max then
  return {S_DENIED_RUN_BUDGET, balance, run.max, run.spent, 'exhausted', run.expires}
end

-- 7. agent daily caps (the agent's, then each ancestor's, which counts its subtree), then the
-- account daily cap: denied when spent + price > cap
if least_day_room and pend + price > least_day_room then
  if levels and rows == NONE then rows, hashes, bys, budgets, spents, day_spents = levels[1], levels[2], levels[3], levels[4], levels[5], levels[6] end
  for i = 1, #rows do
    local r = rows[i]
    if r[F_DAILY_CAP] then
      local agent_spent = day_spents[i] + pend
      if agent_spent + price > r[F_DAILY_CAP] then
        note_cap(hashes[i], 'cap_noted', today, KEYS[8], account_id, now_s, 'evt_' .. call_id .. '_cap', {scope = 'agent',
          agent_id = bys[i] ~= '' and bys[i] or agent_ref, cap = r[F_DAILY_CAP], spent = agent_spent, price = price, target = target, day = day})
        return {S_DENIED_AGENT_DAILY_CAP, balance, r[F_DAILY_CAP], agent_spent, bys[i]}
      end
    end
  end
end
local daily_cap = default_daily_cap
if acct[3] then daily_cap = parsed_numbers and number_of(acct[3]) or acct[3] + 0 end
local spent = account_day_spent
if spent + price > daily_cap then
  note_cap(KEYS[1], 'cap_noted', today, KEYS[8], account_id, now_s, 'evt_' .. call_id .. '_cap',
    {scope = 'account', agent_id = agent_ref, cap = daily_cap, spent = spent, price = price, target = target, day = day})
  return {S_DAILY_CAP_REACHED, balance, daily_cap, spent}
end

-- 8. unpriced routes: daily request cap instead of a price
if unpriced then
  local request_cap = number_of(ARGV[17])
  local used = tonumber(redis.call('GET', KEYS[4]) or '0')
  if used + 1 > request_cap then
    note_cap(KEYS[1], 'reqcap_noted', today, KEYS[8], account_id, now_s, 'evt_' .. call_id .. '_cap',
      {scope = 'requests', agent_id = agent_ref, cap = request_cap, spent = used, price = price, target = target, day = day})
    return {S_REQUEST_CAP_REACHED, balance, request_cap, used}
  end
end

-- 9. balance
-- An enabled mandate's threshold (`refill_below`): a balance under it asks the app for a background
-- refill (the replies' refill_due).
local refill_below = acct[6] and (parsed_numbers and number_of(acct[6]) or acct[6] + 0)
if balance < price then
  -- The mandate ref comes along so the 402's enable_url costs no second round trip. Read here, not
  -- with the account's row: each field of that HMGET costs every call ~1,600 instructions.
  return {S_INSUFFICIENT_BALANCE, balance, price, (refill_below and balance < refill_below) and 1 or 0,
    redis.call('HGET', KEYS[1], 'mref') or '', affordable}
end

-- The price goes to the writes as a string: Redis formats a Lua number anew for every command it
-- is passed to. (`'0'`, not `'-0'`, for a free call: Redis refuses "-0" as an integer.) A flat
-- call's is the argument as sent (the catalog's integer, src/lua/debit.ts), with no format to pay.
local price_s = metered and formatted and formatted[price] or not metered and ARGV[5]
if not price_s then
  price_s = string.format('%d', price)
  if formatted then formatted[price] = price_s end
end
local minus_price = price > 0 and '-' .. price_s or '0'

-- 10. runaway-agent breaker: this request's credits, or one more identical request, over the
-- sliding minute (weighted like the rate limit) past the agent's policy kills the agent.
-- This minute's counts are added first and weighed as HINCRBY returns them (one command each
-- instead of a read now and a write later): a trip deletes both windows, so nothing of the count
-- outlives a refusal, and otherwise the counts are this debit's writes. In a batch they are the
-- memo's (brk_count), written once after the batch's last call.
-- Whether this call's credits count in the breaker window of this minute (the call record's `brk`):
-- only then does its give-back come off that window (lua/lib/breaker-window.lua).
local brk_counted = false
if agent then
  local b, credits, same, brk_credits, brk_same, prev_credits, prev_same, weigh
  -- In a batch, the breaker as this agent's call before left it (levels.brk, of the same minutes,
  -- fingerprint and defaults): its policy parsed, its minute's deferred counts, the previous
  -- minute's counts, and how far each rule then stood from tripping (`room`, as of its `elapsed`).
  -- Only this agent's calls touch its windows, and each that counts or reads them other than here
  -- makes levels.brk anew or drops it (a trip deletes them, and its agent is refused before its
  -- breaker for the rest of the batch), so the keys and arguments are all it checks. A call then
  -- only adds its counts and takes them off the rooms: the previous minute weighs less as the
  -- minute goes on, so a room made earlier in it is never more than the rule leaves now, and only a
  -- call that takes one below 0 weighs its counts exactly (below).
  b = levels and levels.brk
  if b and b[1] == KEYS[11] and b[2] == KEYS[12] and b[3] == req_fp and b[4] == ARGV[15] and b[5] == ARGV[16]
    and (price <= 0 or b[6].credits) and elapsed >= b[13] then
    local d = b[6]
    if price > 0 then
      credits = d.credits + price
      d.credits = credits
      b[14] = b[14] - price
    end
    if req_fp ~= '' then
      local f = b[12]
      same = d[f] + 1
      d[f] = same
      b[15] = b[15] - 1
    end
    if b[14] < 0 or b[15] < 0 then
      weigh = true
      brk_credits, brk_same, prev_credits, prev_same = b[8], b[9], b[10], b[11]
    end
  else
    b = false
    brk_credits = (agent[12] or ARGV[15]) + 0   -- absent: the deployment's defaults
    brk_same = (agent[13] or ARGV[16]) + 0
    prev_credits, prev_same = 0, 0
    if brk_credits > 0 or brk_same > 0 then
      local same_field = 'f:' .. req_fp
      -- The window gets its expiry with its first count, like the rate window: two minutes from then
      -- outlive the minute after it, its last reader. A count past this one's own shows it had it.
      if hash_memo then
        levels.brk = false   -- made anew below, or none: these counts are not the ones it holds
        credits, same = brk_count(KEYS[11], price, req_fp ~= '' and same_field)
      else
        credits = price > 0 and redis.call('HINCRBY', KEYS[11], 'credits', price_s) or nil
        same = req_fp ~= '' and redis.call('HINCRBY', KEYS[11], same_field, '1') or nil
        if (credits or same) and (credits or price) == price and (same or 1) == 1 then redis.call('PEXPIRE', KEYS[11], WINDOW_MS * 2) end
      end
      if (brk_credits > 0 and credits) or (brk_same > 0 and same) then
        -- The previous minute is only read (a trip deletes it): read once per batch, per fingerprint.
        local prev = memo_of and memo_of(KEYS[12], same_field) or memo_hmget(KEYS[12], same_field, 'credits', same_field)
        prev_credits, prev_same = (prev[1] or 0) + 0, (prev[2] or 0) + 0
        weigh = true
        if hash_memo then
          -- Its rooms are set once weighed (below).
          b = {KEYS[11], KEYS[12], req_fp, ARGV[15], ARGV[16], hash_dirty[KEYS[11]], hash_memo[KEYS[12]],
            brk_credits, brk_same, prev_credits, prev_same, same_field, 0, -1, -1}
          levels.brk = b
        end
      end
    end
  end
  brk_counted = credits ~= nil
  if weigh then
    -- Each count over the sliding minute: the previous minute's weighted by its overlap, plus this one's.
    -- An empty previous minute weighs 0 with no math.floor (a C call, ~1,000 instructions).
    local rule, limit, seen, seen_credits, seen_same = nil, 0, 0, nil, nil
    if brk_credits > 0 and credits then
      seen_credits = prev_credits == 0 and credits or math.floor(prev_credits * ((WINDOW_MS - elapsed) / WINDOW_MS)) + credits
      if seen_credits > brk_credits then rule, limit, seen = 'credits_per_minute', brk_credits, seen_credits end
    end
    if not rule and brk_same > 0 and same then
      seen_same = prev_same == 0 and same or math.floor(prev_same * ((WINDOW_MS - elapsed) / WINDOW_MS)) + same
      if seen_same > brk_same then rule, limit, seen = 'identical_per_minute', brk_same, seen_same end
    end
    -- The rooms as of now: a rule that is off never trips (huge); one this call did not weigh
    -- (a call of no credits) is weighed again by the next call that counts for it (-1).
    if b and not rule then
      b[13] = elapsed
      b[14] = brk_credits <= 0 and math.huge or seen_credits and brk_credits - seen_credits or -1
      b[15] = (brk_same <= 0 or req_fp == '') and math.huge or seen_same and brk_same - seen_same or -1
    end
    if rule then
      -- The trip, instead of the debit: the agent is killed exactly as agent-state.lua kills it.
      -- `brk_reset`: the calls debited up to now counted in the windows deleted below, so their
      -- give-backs leave the revived agent's fresh windows alone (lua/lib/breaker-window.lua).
      redis.call('HSET', KEYS[2], 'state', 'killed', 'changed', now_s, 'kill_reason', 'breaker', 'brk_reset', now_s)
      if memo_write then memo_write(KEYS[2], F_STATE, 'killed') end
      levels_epoch = levels_epoch + 1   -- every summary of a level of this agent is stale
      local v = redis.call('HINCRBY', KEYS[2], 'v', 1)
      -- A revived agent starts from an empty window, not from the burst that tripped it.
      -- (Its memo needs no update: the agent is refused before its breaker for the rest of a batch.)
      if memo_del then memo_del(KEYS[11], KEYS[12]) else redis.call('DEL', KEYS[11], KEYS[12]) end
      if pend_levels and hash_memo then settle_levels() end   -- (this agent's: another's was written at its start)
      if memo_flush then memo_flush(KEYS[2]) end   -- the entry reads the agent's hash (its spent_total) from Redis
      if flush_entries then flush_entries(KEYS[8]) end   -- the debits made before it go first
      -- The agent's entry, made here: a call that does not trip makes no function for it.
--@include agent-entry
      local a = append_agent_entry(KEYS[2], KEYS[8], account_id, agent_id, v, now_s)
      emit_event(KEYS[8], account_id, now_s, 'evt_' .. agent_id .. '_v' .. v, 'agent.killed',
        {agent_id = agent_id, name = a[2], reason = 'breaker', rule = rule, limit = limit, observed = seen, target = target})
      return {S_AGENT_KILLED, 0, 'breaker'}
    end
  end
end

-- All checks passed: the writes (the breaker's counts are made).
-- In a batch the balance (and `held`) is the memo's, written once after the batch's last call: the
-- memo holds what Redis holds (every write to it goes through the memo).
if hash_memo then
  balance = balance - price
  memo_set(KEYS[1], 2, 'balance', balance)   -- the account list's `balance`
else
  balance = redis.call('HINCRBY', KEYS[1], 'balance', minus_price)
end
-- A metered reservation is a hold, not a ledger entry (docs/metering.md, "The reservation is a
-- hold"): `balance` is what the account can spend, `held` what its calls in flight have reserved,
-- and every ledger entry carries the posted balance, balance + held, which its entries sum to.
local held = 0
-- (`+ 0`, not number_of: in a batch the field is the number the last call's memo_set left, each new.)
if acct[7] then held = acct[7] + 0 end
if metered and price > 0 then
  if hash_memo then
    held = held + price
    memo_set(KEYS[1], 7, 'held', held)
  else
    held = redis.call('HINCRBY', KEYS[1], 'held', price_s)
  end
end
if price > 0 then
  if hash_memo then
    spent = memo_incr(KEYS[3], price, (parsed_numbers[day_ttl] or number_of(day_ttl)) * 1000)
  else
    spent = redis.call('INCRBY', KEYS[3], price_s)
    if spent == price then redis.call('EXPIRE', KEYS[3], day_ttl) end
  end
  -- The agent's and every ancestor's lifetime spend and day spend rise by the price, and each
  -- ancestor's carve shrinks by what the child on the path holds less now: carve_of(child, spent +
  -- price) − carve_of(child, spent) (lua/lib/budget.lua), which is the price when the child has a
  -- budget (its check above passed: it held at least the price; a revoked child, or one whose carve
  -- was freed as it expired, was refused by the state checks) and 0 without one.
  if not agent then   -- the owner: no levels
  elseif hash_memo then
    -- In a batch, added to the agent's pending sum (settle_levels); a row with a raise (no `epoch`),
    -- whose budget may lapse by the next call's clock, is written at once.
    levels.pend = pend + price
    pend_levels = levels
    if not levels.epoch then settle_levels() end
  else
    -- Alone, one HSET per level of the values its HMGET read plus the price (the script is atomic:
    -- nothing moved them since). The arguments go straight to redis.call (a table and unpack per
    -- level cost ~1 µs a level, measured: docs/decisions.md).
    for i = 1, #rows do
      local spent_s, day_s = string.format('%d', spents[i] + price), string.format('%d', day_spents[i] + price)
      if i > 1 and budgets[i - 1] then
        redis.call('HSET', hashes[i], 'spent_total', spent_s, 'day', today, 'day_spent', day_s,
          'carved', string.format('%d', tonumber(rows[i][F_CARVED] or '0') - price))
      else
        redis.call('HSET', hashes[i], 'spent_total', spent_s, 'day', today, 'day_spent', day_s)
      end
    end
  end
end
if unpriced then
  if redis.call('INCR', KEYS[4]) == 1 then redis.call('EXPIRE', KEYS[4], day_ttl) end
end
-- The call record (refund.lua, settle.lua, the sweeper and record-calls.lua read it). The common one
-- (no Idempotency-Key, no unpriced route, no run) is a string, written with its TTL by one SET (a hash
-- and its EXPIRE cost a flat call ~4,300 instructions more, a metered one ~30,000: bench/RESULTS.md,
-- issue 42). A flat call's: state|price|day|at|agent|chain|brk|target, the target last as it may hold
-- a '|'. A metered call's starts with `m` and its lane (`metered`: '1' on the house lane, 'fee:<pct>'
-- on the owner's), so no reader takes it for a flat one (whose first field is its state), then the
-- flat one's fields but the target, then what the settle charges by, the model by its byte length
-- and the target last (either may hold a '|'):
--   m|metered|state|price|day|at|agent|chain|brk|max_out|clamped|p_in|p_cached|p_out|p_cw|p_cw1h|#model|model|target
-- (p_cw and p_cw1h '' when the caller sent none; the hold is the shape's own). Every other record is
-- a hash, field by field: `unpriced`, `idem`, `chain` and `brk` only when set (their readers take an
-- absent one as '0' or ''), as each field more is a search and a growth of the record's listpack.
if not (unpriced or run) and idem_key == '' then
  if metered then
    -- The ceiling as the caller sent it (an integer), the prices and the model as the spec's part.
    redis.call('SET', KEYS[7], 'm|' .. meter[7] .. '|debited|' .. price_s .. '|' .. today .. '|' .. now_s .. '|' .. agent_id .. '|' .. chain .. '|' .. (brk_counted and '1' or '') .. '|' ..
      (max_out_s or string.format('%d', max_out)) .. '|' .. (clamped == 1 and '1' or '0') .. '|' .. meter[8] .. target, 'EX', '172800')   -- two days
  else
    redis.call('SET', KEYS[7], 'debited|' .. price_s .. '|' .. today .. '|' .. now_s .. '|' .. agent_id .. '|' .. chain .. '|' .. (brk_counted and '1' or '') .. '|' .. target,
      'EX', '172800')   -- two days
  end
else
  if unpriced or idem_key ~= '' then
    local f = {'price', price_s, 'agent', agent_id, 'target', target, 'state', 'debited', 'day', today, 'at', now_s}
    if unpriced then f[#f + 1], f[#f + 2] = 'unpriced', '1' end
    if idem_key ~= '' then f[#f + 1], f[#f + 2] = 'idem', idem_key end
    if chain ~= '' then f[#f + 1], f[#f + 2] = 'chain', chain end
    if brk_counted then f[#f + 1], f[#f + 2] = 'brk', '1' end
    redis.call('HSET', KEYS[7], unpack(f))
  -- An agent's common shapes written directly (no table and unpack per call).
  elseif chain ~= '' and brk_counted then
    redis.call('HSET', KEYS[7], 'price', price_s, 'agent', agent_id, 'target', target, 'state', 'debited', 'day', today, 'at', now_s, 'chain', chain, 'brk', '1')
  elseif brk_counted then
    redis.call('HSET', KEYS[7], 'price', price_s, 'agent', agent_id, 'target', target, 'state', 'debited', 'day', today, 'at', now_s, 'brk', '1')
  elseif chain ~= '' then
    redis.call('HSET', KEYS[7], 'price', price_s, 'agent', agent_id, 'target', target, 'state', 'debited', 'day', today, 'at', now_s, 'chain', chain)
  else
    redis.call('HSET', KEYS[7], 'price', price_s, 'agent', agent_id, 'target', target, 'state', 'debited', 'day', today, 'at', now_s)
  end
  if metered then
    -- The prices as the caller sent them (integers), not the numbers parsed from them.
    -- `metered`: '1' on the house lane, 'fee:<pct>' on the owner's (the settle reads it with the rest).
    redis.call('HSET', KEYS[7], 'metered', meter[7], 'hold', '1', 'model', meter[11], 'p_in', meter[15], 'p_cached', meter[12], 'p_out', meter[16],
      'max_out', string.format('%d', max_out), 'clamped', clamped == 1 and '1' or '0')
    if meter[13] ~= '' then redis.call('HSET', KEYS[7], 'p_cw', meter[13], 'p_cw1h', meter[14]) end
  end
  redis.call('EXPIRE', KEYS[7], '172800')   -- two days
end
if run then run_charge(KEYS[16], KEYS[17], KEYS[7], run, price_s, agent_id, chain, now, tonumber(ARGV[27])) end
-- Until record-call or refund takes it out, the call is in flight; past its deadline it was cut off.
-- In a batch, one ZADD of all its calls after the last (nothing in the script reads the set).
memo_zadd(KEYS[9], abandon_at, account_id .. '|' .. call_id)
if idem_fp ~= '' then
  redis.call('HSET', KEYS[10], 'fp', idem_fp, 'state', 'pending', 'call', call_id)
  redis.call('EXPIRE', KEYS[10], '86400')
end
-- A metered call's entry is its settle's: one debit of what it cost (lua/settle.lua).
-- Packed (src/write-behind/outbox.ts reads it as the `debit` entry of fields id, acct, agent, amount,
-- bal, call, target, at): one field where there were ten, each an argument and a stream field less.
-- In a batch, collected: one entry per batch (`packed_debits`, the calls' `d`s one a line).
if not metered then
  local d = account_id .. '|' .. agent_id .. '|' .. minus_price .. '|' .. string.format('%d', balance + held) .. '|' .. call_id .. '|' .. now_s .. '|' .. target
  if debit_entries then
    local l = debit_entries[KEYS[8]]
    if l then l[#l + 1] = d else debit_entries[KEYS[8]] = {d} end
  else
    redis.call('XADD', KEYS[8], '*', 'kind', 'packed_debit', 'd', d)
  end
end
-- balance.low: only the debit that crosses the threshold (the mandate's while auto-refill is on).
local low
if acct[6] then low = refill_below else low = parsed_numbers and (parsed_numbers[ARGV[12]] or number_of(ARGV[12])) or ARGV[12] + 0 end
if price > 0 and low > 0 and balance < low and balance + price >= low then
  emit_event(KEYS[8], account_id, now_s, 'evt_' .. call_id .. '_low', 'balance.low',
    {balance = balance, threshold = low, auto_refill = acct[6] ~= false, agent_id = agent_ref, call_id = call_id})
end
-- cap.threshold: the levels of a daily cap or budget this debit crossed.
--@include thresholds
if not run then return {S_OK, balance, acct[5] or '', spent, (refill_below and balance < refill_below) and 1 or 0, price, max_out, clamped} end
return {S_OK, balance, acct[5] or '', spent, (refill_below and balance < refill_below) and 1 or 0, price, max_out, clamped, unpack(run_reply(run))}
