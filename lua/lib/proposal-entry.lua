-- A proposal's whole record (JSON, as the proposals hash holds it) as a `proposal` outbox entry of
-- its version; the Postgres projection keeps the highest version (src/proposals/sink.ts). Also
-- the owner's event of a transition. Spliced in by `--@include proposal-entry`.
local function append_proposal_entry(outbox_key, acct, rec, now)
  redis.call('XADD', outbox_key, '*', 'kind', 'proposal', 'id', rec.id .. ':v' .. rec.v, 'acct', acct,
    'v', rec.v, 'at', now, 'rec', cjson.encode(rec))
end

-- The value as the events show it: a number of credits, or the pattern of an `allow`.
local function proposal_value(rec)
  if rec.kind == 'allow' then return rec.value end
  return tonumber(rec.value)
end

-- pending → approved | declined | expired: the record, its index, its entry and its event.
-- `lapses_iso`: when an approval's temporary raise lapses (docs/api.md §13b), else nil.
local function decide_proposal(props_key, pending_key, outbox_key, acct, rec, status, via, note, now, status_base, lapses_iso)
  rec.status = status
  rec.decided = tonumber(now)
  rec.via = via
  if note and note ~= '' then rec.note = note end
  rec.claim = nil
  rec.claim_until = nil
  rec.v = rec.v + 1
  redis.call('HSET', props_key, rec.id, cjson.encode(rec))
  redis.call('ZREM', pending_key, rec.id)
  append_proposal_entry(outbox_key, acct, rec, now)
  local data = {proposal_id = rec.id, kind = rec.kind, value = proposal_value(rec), status = status,
    agent_id = rec.agent_id or cjson.null, via = via, note = rec.note or cjson.null, status_url = status_base .. rec.id}
  if lapses_iso then data.lapses_at = lapses_iso end
  redis.call('XADD', outbox_key, '*', 'kind', 'event', 'id', 'evt_' .. rec.id .. '_' .. status, 'acct', acct,
    'type', 'proposal.decided', 'at', now, 'data', cjson.encode(data))
end

-- A claim (an approval whose top-up is at the card processor) holds the proposal until it lapses.
local function claimed(rec, now)
  return rec.claim and tonumber(rec.claim_until or 0) > tonumber(now)
end
