/**
 * Where the batched debit's Lua goes, line by line: how many Lua VM instructions each line of the
 * debit's wrapper (src/redis/batched-scripts.ts around lua/debit.lua, its libraries included) runs
 * per call, for the owner's flat call and an agent's at depth 1 and 4, each case's calls in batches
 * of one account as the service sends them under load. script-cost.ts counts what a case costs
 * Redis in all; this says which lines of the Lua make a case dearer than another (the depth-4
 * debit's per-call part, issue 42). A VM instruction is not a fixed cost (a table read by string
 * key or a `redis.call` runs far more machine code than an `if`), so read it beside script-cost.
 *
 * Redis removes Lua's `debug` library from scripts, so this needs REDIS_BIN: a redis-server that
 * hands it to scripts as the global `prof_debug` (Redis 7.0 built from source with two lines
 * added: `prof_debug = debug` after `local dbg = debug` in src/eval.c's error-handler prelude, and
 * "prof_debug" in src/script_lua.c's lua_builtins_allow_list). The hook (one count per VM
 * instruction, by the line it is on) is set at the top of the debit's body and counted into Lua's
 * registry; Redis removes it when each script ends. It never runs in the service.
 *
 *   REDIS_BIN=<that redis-server> ./node_modules/.bin/bun bench/lua-lines.ts [--batch 16] [--batches 20] [--top 30]
 *
 * Prints only (markdown); bench/RESULTS.md is left alone.
 */
import Redis from 'ioredis'
import { parseArgs } from 'node:util'
import { hashToken } from '../src/auth/tokens'
import { runDebit } from '../src/lua/debit'
import { batchedCaller, batchedLua } from '../src/redis/batched-scripts'
import type { RedisClient } from '../src/redis/client'
import type { RedisContext } from '../src/redis/context'
import { LAYOUT_FIELD, LAYOUT_VALUE } from '../src/redis/hash-layout'
import { Keys } from '../src/redis/keys'
import { loadScripts, readScripts } from '../src/redis/scripts'
import { variableKeysCaller } from '../src/redis/variable-keys'
import { windowsAt } from '../src/windows'
import { freePorts, waitPing } from '../test/helpers/redis-server'
import { debitCases, seedAccount, type Who } from './lib/debit-cases'

const { values: opt } = parseArgs({
  options: {
    batch: { type: 'string', default: '16' },
    batches: { type: 'string', default: '20' },
    top: { type: 'string', default: '30' },
  },
})
const BATCH = Number(opt.batch)
const BATCHES = Number(opt.batches)
const TOP = Number(opt.top)
const bin = process.env.REDIS_BIN
if (!bin) throw new Error('REDIS_BIN: a redis-server whose scripts reach the debug library as prof_debug (see the header)')

const [port] = await freePorts(1)
const proc = Bun.spawn([bin, '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdout: 'ignore', stderr: 'ignore' })
process.on('exit', () => proc.kill('SIGKILL'))
await waitPing(port!, 10_000)
const redis = new Redis({ port, enableAutoPipelining: true })
if ((await redis.eval("return type(prof_debug) == 'table' and 1 or 0", 0)) !== 1) throw new Error(`${bin}: scripts cannot reach prof_debug (see the header)`)

// The debit with the hook at its top: counts by line into the registry, where the next script finds them.
const HOOK = `do local R = prof_debug.getregistry(); local C = R.lua_lines or {}; R.lua_lines = C
prof_debug.sethook(function() local l = prof_debug.getinfo(2, 'l').currentline; C[l] = (C[l] or 0) + 1 end, '', 1) end\n`
const debit = readScripts().find((s) => s.name === 'debit')!
const hooked = HOOK + debit.lua
const perCall = debit.numberOfKeys!
const wrapperLines = batchedLua(hooked, perCall).split('\n')
const plain = variableKeysCaller(redis as unknown as RedisClient, hooked)
const scripts = loadScripts(redis as unknown as RedisClient)
// Every batch through the wrapper, as a batch of one account's calls goes from WRAPPED_FROM on.
scripts.debit = batchedCaller(redis as unknown as RedisClient, 'debit', hooked, perCall, plain, 32, 0)
const keys = new Keys('lualines')
// runDebit reads only these of a context.
const ctx = { redis: redis as unknown as RedisClient, keys, scripts, clock: { now: () => Date.now() } } as unknown as RedisContext

const take = async (): Promise<Map<number, number>> => {
  const flat = (await redis.eval(
    "local R = prof_debug.getregistry(); local C = R.lua_lines or {}; R.lua_lines = nil; local out = {}; for l, n in pairs(C) do out[#out + 1] = l; out[#out + 1] = n end; return out",
    0,
  )) as number[]
  const m = new Map<number, number>()
  for (let i = 0; i < flat.length; i += 2) m.set(flat[i]!, flat[i + 1]!)
  return m
}

const acct = 'acc_07_lualines'
await seedAccount(redis, keys, hashToken, acct, { [LAYOUT_FIELD]: LAYOUT_VALUE })
const now = Date.now()
const args = debitCases({ hashToken, acct, now, windows: windowsAt(now), idPrefix: 'call_lines_' })

const perCase = new Map<Who, Map<number, number>>()
for (const who of ['owner', 'depth-1', 'depth-4'] as const) {
  // Warm: the minute's first calls set the windows' expiries, and the first batch makes what a batch keeps.
  for (let b = 0; b < 2; b++) await Promise.all(Array.from({ length: BATCH }, () => runDebit(ctx, args(who))))
  await take()
  for (let b = 0; b < BATCHES; b++) {
    const replies = await Promise.all(Array.from({ length: BATCH }, () => runDebit(ctx, args(who))))
    const bad = replies.find((r) => r.status !== 'ok')
    if (bad) throw new Error(`${who}: ${JSON.stringify(bad)}`)
  }
  perCase.set(who, await take())
}

const calls = BATCH * BATCHES
const total = (m: Map<number, number>) => [...m.values()].reduce((a, b) => a + b, 0) / calls
const line = (l: number) => (wrapperLines[l - 1] ?? '').trim().replace(/\|/g, '\\|').slice(0, 110)
console.log(`Lua VM instructions per call of the batched debit, batches of ${BATCH} calls of one account, ${BATCHES} batches a case`)
console.log()
console.log('| case | VM instructions a call |')
console.log('|---|---:|')
for (const [who, m] of perCase) console.log(`| ${who} | ${total(m).toFixed(1)} |`)
for (const who of ['depth-1', 'depth-4'] as const) {
  const o = perCase.get('owner')!, d = perCase.get(who)!
  const rows = [...new Set([...o.keys(), ...d.keys()])].map((l) => ({ l, owner: (o.get(l) ?? 0) / calls, it: (d.get(l) ?? 0) / calls }))
  rows.sort((a, b) => Math.abs(b.it - b.owner) - Math.abs(a.it - a.owner))
  console.log()
  console.log(`The ${TOP} lines whose count differs most, ${who} against the owner (a call):`)
  console.log()
  console.log(`| ${who} − owner | owner | ${who} | line of the wrapper |`)
  console.log('|---:|---:|---:|---|')
  for (const r of rows.slice(0, TOP)) console.log(`| ${(r.it - r.owner).toFixed(1)} | ${r.owner.toFixed(1)} | ${r.it.toFixed(1)} | \`${line(r.l)}\` |`)
}
redis.disconnect()
process.exit(0)
