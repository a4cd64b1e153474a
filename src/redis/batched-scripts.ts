/**
 * A script that runs once per request (the debit) is sent in batches: the calls made within one
 * turn of the event loop for keys of one hash slot go to Redis as one EVALSHA of a generated
 * wrapper that runs the script's own body once per call, in order, each in its own `pcall`
 * (src/redis/turn-batch.ts gathers them). What a command costs outside the script — ioredis
 * building, writing and parsing it, Redis starting a script — is then paid once per batch (issue
 * 17); inside, each call runs exactly as the script alone would, sees the writes of the calls
 * before it (Redis runs them one after the other anyway), and gets its own reply or its own error.
 * A call alone in its turn goes as the plain script. A body that reads through
 * lua/lib/hash-memo.lua (the debit) shares what it read among the batch's calls and writes its
 * deferred fields once after the last one: each hash is read and written once per batch, not once
 * per call, with the same replies and the same Redis left behind (test/lua/debit-batch.test.ts).
 * errors: a call whose body fails (an error reply, a failing redis.call) rejects that call alone.
 */
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
 * The wrapper: KEYS are the calls' keys one after the other (`perCall` each); ARGV[1] is the number
 * of calls, ARGV[2 .. n + 1] each call's number of ARGV, then every call's ARGV one after the other.
 * The body becomes a function whose parameters KEYS and ARGV shadow the globals, so it reads its own.
 */
export function batchedLua(body: string, perCall: number): string {
  // A body that reads through lua/lib/hash-memo.lua shares its memo, and its deferred writes, among
  // the batch's calls; the writes are made after the last call.
  const shared = body
    .replace(/^local hash_memo = nil --@batch-memo$/m, 'local hash_memo = batch_memo')
    .replace(/^local hash_dirty = nil --@batch-dirty$/m, 'local hash_dirty = batch_dirty')
    .replace(/^local write_deferred = nil --@batch-write$/m, 'local write_deferred = batch_write')
  // What a body puts above its `--@batch-per-call` line (its libraries' functions) is made once per
  // batch, outside the per-call function: a closure made per call costs Redis' Lua an allocation
  // and its collection (bench/RESULTS.md, issue 42).
  const marker = /^--@batch-per-call$/m.exec(shared)
  const once = marker ? shared.slice(0, marker.index) : ''
  const eachCall = marker ? shared.slice(marker.index) : shared
  return `-- batched by src/redis/batched-scripts.ts
local batch_memo, batch_dirty = {}, {}
-- A hash's deferred fields (field → a string, or an integer to format) in one HSET.
local function batch_write(key, fields)
  local args = {}
  for f, v in pairs(fields) do
    args[#args + 1] = f
    args[#args + 1] = type(v) == 'number' and string.format('%d', v) or v
  end
  redis.call('HSET', key, unpack(args))
end
${once}
local function one(KEYS, ARGV)
${eachCall}
end
local n = tonumber(ARGV[1])
local out, at = {}, 1 + n
for i = 1, n do
  local o = (i - 1) * ${perCall}
  local keys = {unpack(KEYS, o + 1, o + ${perCall})}
  local argc = tonumber(ARGV[1 + i])
  local argv = {unpack(ARGV, at + 1, at + argc)}
  at = at + argc
  local ok, reply = pcall(one, keys, argv)
  if ok then out[i] = reply
  else out[i] = redis.error_reply(type(reply) == 'table' and reply.err or tostring(reply)) end
end
for key, fields in pairs(batch_dirty) do batch_write(key, fields) end
return out
`
}

/** The key's hash slot tag (`{…}`): calls of one tag share a batch. */
function slotTag(key: string): string {
  const open = key.indexOf('{')
  const close = open < 0 ? -1 : key.indexOf('}', open + 1)
  return close > open + 1 ? key.slice(open + 1, close) : key
}

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
) {
  const send = variableKeysCaller<(Reply | Error)[]>(redis, batchedLua(lua, perCall))
  const batch = new TurnBatch<Call, Reply>(async (_, calls) => {
    if (calls.length === 1) return [await single(calls[0]!.keys, calls[0]!.argv)]
    const keys: string[] = []
    const counts: number[] = []
    const argv: Argv = []
    for (const c of calls) {
      keys.push(...c.keys)
      counts.push(c.argv.length)
      argv.push(...c.argv)
    }
    return send(keys, [calls.length, ...counts, ...argv])
  }, max)
  return (keys: string[], argv: Argv): Promise<Reply> => batch.add(slotTag(keys[0]!), { keys, argv })
}
