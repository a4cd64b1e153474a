/**
 * A script that runs once per request (the debit) is sent in batches: the calls made within one
 * turn of the event loop (for keys of one hash slot, on a Cluster) go to Redis as one EVALSHA of a generated
 * wrapper that runs the script's own body once per call, in order, each in its own `pcall`
 * (src/redis/turn-batch.ts gathers them). What a command costs outside the script — ioredis
 * building, writing and parsing it, Redis starting a script — is then paid once per batch (issue
 * 17); inside, each call runs exactly as the script alone would, sees the writes of the calls
 * before it (Redis runs them one after the other anyway), and gets its own reply or its own error.
 * A call alone in its turn goes as the plain script, as do calls of different accounts (the
 * wrapper's own cost is then more than it saves). A body that reads through
 * lua/lib/hash-memo.lua (the debit) shares what it read among the batch's calls and writes its
 * deferred fields and counter rises once after the last one: each hash and counter is read and
 * written once per batch, not once per call, with the same replies and the same Redis left behind
 * (test/lua/debit-batch.test.ts). What it puts above a `--@batch-per-call` line is made once per
 * batch (test/lua/batched-args.property.test.ts).
 * errors: a call whose body fails (an error reply, a failing redis.call) rejects that call alone.
 */
import { Cluster } from 'ioredis'
import type { RedisClient } from './client'
import { TurnBatch } from './turn-batch'
import { variableKeysCaller } from './variable-keys'

type Reply = (string | number | null)[]
type Argv = (string | number)[]
interface Call {
  keys: string[]
  argv: Argv
}

/**
 * The wrapper: a batch's calls mostly repeat the call before them (one account, one agent, one
 * minute), so each call sends only where it differs from it, and each distinct value once. KEYS are
 * the batch's keys (after each call's own key, when the body names one: ownKeySlot); ARGV[1] is the
 * number of calls (negative: two calls share an own key), ARGV[2 .. n + 1] each call's changes, then
 * the batch's arguments. The first call sends all its slots in order (its "changes" are only its
 * number of ARGV); every later call only where it differs from the call before, each value not sent
 * before once, in the order first met. A later call's changes are its number of ARGV, then a slot
 * per change, space-separated: p (a slot of the `perCall` keys, then of the ARGV after them) takes
 * the next value not sent before, p=i the i-th value sent, p:j the value of this call's slot j (an
 * earlier one), so calls of different accounts make the same list. Each distinct list is parsed once
 * a batch (string.gmatch took ~40 µs over a list of 50 slots). Every argument sent costs
 * Redis a parse and an object, and Lua an interned string (bench/RESULTS.md, issue 42).
 * The body becomes a function whose parameters KEYS and ARGV shadow the globals, so it reads its own
 * (a copy: what a call does to them never reaches the next; a body marked `--@batch-args-read-only`
 * gets the wrapper's tables themselves).
 */
export function batchedLua(body: string, perCall: number): string {
  const own = ownKeySlot(body)
  // A body that never writes its KEYS and ARGV (it says so by a `--@batch-args-read-only` line) is
  // given the wrapper's own tables, changed in place call after call, not a copy of each per call.
  const readOnly = /^--@batch-args-read-only$/m.test(body)
  const memo = /^local hash_memo = nil --@batch-memo$/m.test(body)
  // A body that reads through lua/lib/hash-memo.lua shares its memo, and its deferred writes, among
  // the batch's calls; the writes are made after the last call.
  const shared = body
    .replace(/^local hash_memo = nil --@batch-memo$/m, 'local hash_memo = batch_memo')
    .replace(/^local hash_dirty = nil --@batch-dirty$/m, 'local hash_dirty = batch_dirty')
    .replace(/^local write_deferred = nil --@batch-write$/m, 'local write_deferred = batch_write')
    .replace(/^local count_dirty = nil --@batch-counts$/m, 'local count_dirty = batch_counts')
    .replace(/^local set_adds = nil --@batch-adds$/m, 'local set_adds = batch_adds')
    .replace(/^local expires = nil --@batch-expires$/m, 'local expires = batch_expires')
    .replace(/^local debit_entries = nil --@batch-entries$/m, 'local debit_entries = batch_entries')
    .replace(/^local flush_entries = nil --@batch-entries-flush$/m, 'local flush_entries = batch_flush_entries')
    .replace(OWN_KEY, 'local batch_new = batch_new')
  // What a body puts above its `--@batch-per-call` line (its libraries' functions) is made once per
  // batch, outside the per-call function: a closure made per call costs Redis' Lua an allocation
  // and its collection (bench/RESULTS.md, issue 42).
  const marker = /^--@batch-per-call$/m.exec(shared)
  const once = marker ? shared.slice(0, marker.index) : ''
  const eachCall = marker ? shared.slice(marker.index) : shared
  // A body that collects its calls' packed debit entries (lua/debit.lua) gets them written as one
  // stream entry per outbox: each XADD costs Redis a command and a stream node's growth (issue 42).
  const entries = /^local debit_entries = nil --@batch-entries$/m.test(body)
  // A memo body's `--@batch-end <function>` line: what it keeps pending across its calls, written
  // by that function (of its part made once) after the last call, before the flush; it is given
  // `true` (no call reads the memo after it).
  const end = memo ? /^--@batch-end (\w+)$/m.exec(once) : null
  return `-- batched by src/redis/batched-scripts.ts
local batch_memo, batch_dirty, batch_counts, batch_adds, batch_expires = {}, {}, {}, {}, {}
local batch_n, batch_keys = tonumber(ARGV[1]), 0   -- the calls, and the keys before their shared ones
${
  own
    ? `-- KEYS[1 .. n]: each call's own key (slot ${own}). None existing: no call of the batch was applied
-- before (a batch is applied whole or not at all), so none is a resend. A negative n: two calls
-- share one (never sent by the app), each call checks its own.
local batch_new = false
if batch_n < 0 then batch_n = -batch_n else batch_new = redis.call('EXISTS', unpack(KEYS, 1, batch_n)) == 0 end
batch_keys = batch_n`
    : ''
}
-- A hash's deferred fields (field → a string, or an integer to format) in one HSET. Up to four (a
-- level's, a breaker window's, the account's) go straight to redis.call: a table grown field by
-- field and its unpack cost a batch ~5,000 instructions a hash.
local batch_format = string.format
local function batch_write(key, fields)
  local f1, v1 = next(fields)
  if type(v1) == 'number' then v1 = batch_format('%d', v1) end
  local f2, v2 = next(fields, f1)
  if f2 == nil then return redis.call('HSET', key, f1, v1) end
  if type(v2) == 'number' then v2 = batch_format('%d', v2) end
  local f3, v3 = next(fields, f2)
  if f3 == nil then return redis.call('HSET', key, f1, v1, f2, v2) end
  if type(v3) == 'number' then v3 = batch_format('%d', v3) end
  local f4, v4 = next(fields, f3)
  if f4 == nil then return redis.call('HSET', key, f1, v1, f2, v2, f3, v3) end
  if type(v4) == 'number' then v4 = batch_format('%d', v4) end
  if next(fields, f4) == nil then return redis.call('HSET', key, f1, v1, f2, v2, f3, v3, f4, v4) end
  local args = {f1, v1, f2, v2, f3, v3, f4, v4}
  for f, v in next, fields, f4 do
    args[#args + 1] = f
    args[#args + 1] = type(v) == 'number' and batch_format('%d', v) or v
  end
  redis.call('HSET', key, unpack(args))
end
${
  entries
    ? `-- The packed debit entries (\`d\`) the calls collected for outbox \`key\`, as one stream entry:
-- \`packed_debits\`, the lines joined by '\\n' (none holds one: ids are generated, a flat debit's
-- target a catalog slug or provider id, src/catalog/schema.ts), one alone as the plain
-- \`packed_debit\`. Written after the batch's last call, or before another entry of that outbox (the
-- body calls it first), so the stream keeps the calls' order.
local batch_entries = {}
local function batch_flush_entries(key)
  local l = batch_entries[key]
  if not l then return end
  batch_entries[key] = nil
  if #l == 1 then redis.call('XADD', key, '*', 'kind', 'packed_debit', 'd', l[1])
  else redis.call('XADD', key, '*', 'kind', 'packed_debits', 'd', table.concat(l, '\\n')) end
end`
    : ''
}
${once}
local function one(KEYS, ARGV)
${eachCall}
end
local n = batch_n
local out, parsed = {}, {}
local key_at, arg_at = batch_keys, 1 + n   -- the last key and argument taken as new
local tkeys, targv = {}, {}       -- the previous call's, changed in place into this one's
local argc_before = 0
-- The first call sends every slot in order, its spec only its number of ARGV: a list of ~40 changes
-- costs string.gmatch more than the values themselves (bench/RESULTS.md, issue 42).
-- A spec starting with '!': the call's account (first key) has no other call in the batch, so it runs
-- without the batch's memo, reading and writing as the script alone does: the memo's tables cost a
-- call more than they save when nothing is shared (bench/RESULTS.md, issue 42).
local argc = ARGV[2]
local alone = string.byte(argc, 1) == 33
argc = tonumber(alone and string.sub(argc, 2) or argc)
for slot = 1, ${perCall} do
  ${own ? `if slot ~= ${own} then key_at = key_at + 1; tkeys[slot] = KEYS[key_at] end` : 'key_at = key_at + 1; tkeys[slot] = KEYS[key_at]'}
end
for j = 1, argc do targv[j] = ARGV[arg_at + j] end
arg_at = arg_at + argc
local changes = {}
for i = 1, n do
  if i > 1 then
  local spec = ARGV[1 + i]
  changes = parsed[spec]
  if not changes then
    local bang, c, rest = string.match(spec, '^(!?)(%d+)(.*)$')
    changes = {argc = tonumber(c), alone = bang == '!'}
    -- slot, slot=i (the i-th distinct value), slot:j (this call's slot j, set before it: negative)
    for slot, how, ref in string.gmatch(rest, '(%d+)([=:]?)(%d*)') do
      changes[#changes + 1] = tonumber(slot)
      changes[#changes + 1] = how == ':' and -tonumber(ref) or tonumber(ref) or 0
    end
    parsed[spec] = changes
  end
  argc, alone = changes.argc, changes.alone
  end
  for j = 1, #changes, 2 do
    local slot, r = changes[j], changes[j + 1]
    if r < 0 then
      if slot <= ${perCall} then tkeys[slot] = tkeys[-r] else targv[slot - ${perCall}] = targv[-r - ${perCall}] end
    elseif slot <= ${perCall} then
      if r == 0 then
        key_at = key_at + 1
        r = key_at
      ${own ? "else\n        r = r + n   -- after the own keys\n      " : ''}end
      tkeys[slot] = KEYS[r]
    else
      if r == 0 then
        arg_at = arg_at + 1
        r = arg_at
      else
        r = r + 1 + n
      end
      targv[slot - ${perCall}] = ARGV[r]
    end
  end
${own ? `  tkeys[${own}] = KEYS[i]\n` : ''}${memo ? '  hash_memo = not alone and batch_memo or nil\n' : ''}${
    readOnly
      ? `  -- A call with fewer ARGV than the one before: its absent ones read as nil.
  for j = argc + 1, argc_before do targv[j] = nil end
  argc_before = argc
  local ok, reply = pcall(one, tkeys, targv)`
      : `  local keys, argv = {unpack(tkeys, 1, ${perCall})}, {unpack(targv, 1, argc)}
  local ok, reply = pcall(one, keys, argv)`
  }
  if ok then out[i] = reply
  else out[i] = redis.error_reply(type(reply) == 'table' and reply.err or tostring(reply)) end
end
${end ? `-- The body's pending writes, into the memo (the last call may have run without it).
hash_memo = batch_memo
${end[1]}(true)
` : ''}for key, fields in pairs(batch_dirty) do batch_write(key, fields) end
-- The expiry of a hash the deferred writes may have made.
for key, ms in pairs(batch_expires) do redis.call('PEXPIRE', key, ms) end
-- A counter's deferred rises, and the expiry of one they created.
for key, c in pairs(batch_counts) do
  redis.call('INCRBY', key, c[1])
  if c[2] then redis.call('PEXPIRE', key, c[2]) end
end
-- A sorted set's deferred members, in one ZADD.
for key, a in pairs(batch_adds) do redis.call('ZADD', key, unpack(a)) end
${entries ? "-- The debits' entries not yet written.\nfor key in next, batch_entries do batch_flush_entries(key) end\n" : ''}return out
`
}

/**
 * A body's `local batch_new = nil --@batch-new <slot>` line: KEYS[slot] is each call's own key (the
 * debit's call record), which exists once the call was applied. The wrapper then sends the calls'
 * own keys first and checks them with one EXISTS: `batch_new` is true when none exists, so the calls
 * need not check their own (a resent batch has them all, or none when every call was refused).
 */
const OWN_KEY = /^local batch_new = nil --@batch-new (\d+)$/m
function ownKeySlot(body: string): number | null {
  const m = OWN_KEY.exec(body)
  return m ? Number(m[1]) : null
}

/** A batch's distinct values in the order first met: `ref` is 0 for a new one (sent), else its number. */
class Distinct {
  readonly sent: string[] = []
  private readonly seen = new Map<string, number>()
  /** Sends `v` at the next place whether or not it was sent before; later refs name its first. */
  push(v: string): void {
    this.sent.push(v)
    if (!this.seen.has(v)) this.seen.set(v, this.sent.length)
  }
  ref(v: string): number {
    const at = this.seen.get(v)
    if (at !== undefined) return at
    this.sent.push(v)
    this.seen.set(v, this.sent.length)
    return 0
  }
}

/** The first of `xs[0 .. end)` equal to `v` (1-based, never `skip`), or 0: a call's earlier slot holding a value. */
function firstSlot(xs: readonly string[], v: string, end: number, skip: number): number {
  for (let m = 0; m < end; m++) if (m + 1 !== skip && xs[m] === v) return m + 1
  return 0
}

/** The key's hash slot tag (`{…}`): calls of one tag share a batch. */
function slotTag(key: string): string {
  const open = key.indexOf('{')
  const close = open < 0 ? -1 : key.indexOf('}', open + 1)
  return close > open + 1 ? key.slice(open + 1, close) : key
}

/**
 * The fewest calls of one first key that go through the wrapper together: measured on the owner's
 * debit (bench/script-cost.ts --sizes), one account's batch of 2 costs Redis 1.3× two plain calls, of
 * 3 about the same, of 4 0.85×, of 16 0.49×; calls of different accounts cost more in it at any size.
 */
export const WRAPPED_FROM = 4

/**
 * Registers the wrapper of `name` on the client and answers a caller with the plain script's
 * signature: `single` runs one call as the plain script.
 */
export function batchedCaller(
  redis: RedisClient,
  name: string,
  lua: string,
  perCall: number,
  single: (keys: string[], argv: Argv) => Promise<Reply>,
  /** A batch's most calls (declared with the script, scripts.ts BATCH_SIZE). */
  max?: number,
  /** The fewest calls of one first key sent through the wrapper; 0: the whole batch always (tests of the wrapper itself). */
  wrappedFrom = WRAPPED_FROM,
) {
  const send = variableKeysCaller<(Reply | Error)[]>(redis, batchedLua(lua, perCall))
  const own = ownKeySlot(lua)
  const wrapped = (calls: Call[]): Promise<(Reply | Error)[]> => {
    const keys = new Distinct()
    const values = new Distinct()
    let before: Call = { keys: [], argv: [] }
    // A call whose account (first key) is alone in the batch runs without the memo ('!').
    const perAccount = new Map<string, number>()
    for (const c of calls) perAccount.set(c.keys[0]!, (perAccount.get(c.keys[0]!) ?? 0) + 1)
    const bang = (c: Call) => (perAccount.get(c.keys[0]!) === 1 ? '!' : '')
    const changes = calls.map((c, i) => {
      const argv = c.argv.map(String)
      if (i === 0) {
        // Every slot in order (the wrapper reads them without a list): each value sent, the first
        // of each kept for the later calls' references.
        c.keys.forEach((k, j) => j + 1 !== own && keys.push(k))
        for (const v of argv) values.push(v)
        before = { keys: c.keys, argv }
        return bang(c) + String(argv.length)
      }
      let list = bang(c) + String(c.argv.length)
      // A value this call already holds in an earlier slot is named by that slot (`at:j`), not by
      // its place among the batch's values: calls of different accounts then make the same list of
      // changes, parsed once a batch (each list parsed costs the script a string.gmatch pass). Only
      // a changed slot looks back for it: most slots repeat the call before.
      const slot = (at: number, v: string, d: Distinct, j: number) => {
        if (j !== 0) return (list += ` ${at}:${j}`)
        const ref = d.ref(v)
        list += ref === 0 ? ` ${at}` : ` ${at}=${ref}`
      }
      for (let j = 0; j < c.keys.length; j++) {
        const k = c.keys[j]!
        if (j + 1 !== own && k !== before.keys[j]) slot(j + 1, k, keys, firstSlot(c.keys, k, j, own ?? 0))
      }
      for (let j = 0; j < argv.length; j++) {
        const v = argv[j]!
        if (v === before.argv[j]) continue
        const e = firstSlot(argv, v, j, 0)
        slot(perCall + j + 1, v, values, e === 0 ? 0 : perCall + e)
      }
      before = { keys: c.keys, argv }
      return list
    })
    if (own === null) return send(keys.sent, [calls.length, ...changes, ...values.sent])
    const owns = calls.map((c) => c.keys[own - 1]!)
    const shared = new Set(owns).size < owns.length
    return send([...owns, ...keys.sent], [shared ? -calls.length : calls.length, ...changes, ...values.sent])
  }
  const asError = (e: unknown): Error => (e instanceof Error ? e : new Error(String(e)))
  const alone = (c: Call): Promise<Reply | Error> => single(c.keys, c.argv).catch(asError)
  const batch = new TurnBatch<Call, Reply>(async (_, calls) => {
    if (calls.length === 1) return [await single(calls[0]!.keys, calls[0]!.argv)]
    // The wrapper pays where one first key (the debit's account) has several calls: what it shares
    // (reads, deferred writes, repeated arguments) is then shared. Its own cost per batch (~290,000
    // instructions) is then paid anyway, and a call of another key joins it for less than its plain
    // script (run without the memo, ~165,000 against ~225,000). With no such key each call goes as
    // the plain script, on the same connection in the same turn: a batch of different accounts only
    // paid from 8 calls of one shard, and under a fleet's load (every shard's calls of a turn
    // together) cost more than the plain scripts (bench/RESULTS.md, issue 42).
    const groups = new Map<string, number[]>()
    calls.forEach((c, i) => {
      const g = groups.get(c.keys[0]!)
      if (g) g.push(i)
      else groups.set(c.keys[0]!, [i])
    })
    let widest = 0
    for (const g of groups.values()) widest = Math.max(widest, g.length)
    if (wrappedFrom === 0 || widest >= wrappedFrom) return wrapped(calls)
    return Promise.all(calls.map(alone))
  }, max)
  // On a Cluster a script's keys share one slot, so a batch is one slot's calls; one Redis takes
  // every shard's calls of a turn in one batch (fewer, fuller batches: issue 42).
  const groupOf = redis instanceof Cluster ? (keys: string[]) => slotTag(keys[0]!) : () => ''
  return (keys: string[], argv: Argv): Promise<Reply> => batch.add(groupOf(keys), { keys, argv })
}
