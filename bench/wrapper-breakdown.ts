/**
 * Where a script start and a batch wrapper's own cost go, per function of redis-server: each case
 * runs `batches` times in its own callgrind window, dumped to one file for callgrind_annotate
 * (`callgrind_annotate --inclusive=yes <dir>/<case>.cg`). Debian's redis-server is stripped (Lua's
 * internals show as addresses): REDIS_BIN=<a redis-server built from the same source> names them.
 * Keys and arguments are the shape of an owner's flat debit (9 keys, 13 arguments), every call's
 * account and call id new, as under a fleet's load.
 *
 * Cases (a batch is two calls):
 *   plain2   two plain `return 0` scripts, one write
 *   plain1   one of them
 *   concat0  one `return 0` carrying both calls' 18 keys and 26 arguments
 *   lean     a minimal wrapper: a count of KEYS and ARGV per call, each call a function in its own
 *            pcall over its own copy of its KEYS and ARGV, answering {0, 0}
 *   generic  src/redis/batched-scripts.ts' wrapper over a body answering {0, 0}, every batch through it
 *
 *   REDIS_BIN=... ./node_modules/.bin/bun bench/wrapper-breakdown.ts [batches] [case,case]
 */
import Redis from 'ioredis'
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePorts, waitPing } from '../test/helpers/redis-server'
import { UNDER_VALGRIND } from './lib/callgrind-redis'
import { batchedCaller } from '../src/redis/batched-scripts'
import type { RedisClient } from '../src/redis/client'

const N = Number(process.argv[2] ?? 200)
const only = process.argv[3]
const out = mkdtempSync(join(tmpdir(), 'pab-wrapper-breakdown-'))
const [port] = await freePorts(1)
const proc = Bun.spawn(
  ['valgrind', '--tool=callgrind', '--compress-strings=no', '--compress-pos=no', '--dump-instr=no', `--callgrind-out-file=${out}/cg.%p`,
    process.env.REDIS_BIN ?? 'redis-server', '--port', String(port), '--bind', '127.0.0.1', '--dir', out, ...UNDER_VALGRIND],
  { stdout: 'ignore', stderr: 'ignore' },
)
process.on('exit', () => proc.kill('SIGKILL'))
await waitPing(port!, 60_000)
const control = (flag: string) => {
  const r = Bun.spawnSync(['callgrind_control', flag, String(proc.pid)])
  if (r.exitCode !== 0) throw new Error(`callgrind_control ${flag}: ${r.stderr.toString()}`)
}
const dumps = () => readdirSync(out).filter((f) => /^cg\.\d+\.\d+$/.test(f)).sort((x, y) => Number(x.split('.').pop()) - Number(y.split('.').pop()))
const redis = new Redis({ port })

let seq = 0
/** An owner's flat debit's KEYS and ARGV (lua/debit.lua), of an account and a call id not seen before. */
function call(i: number): { keys: string[]; argv: string[] } {
  const a = `acct_${(seq++ % 80).toString(36).padStart(10, 'x')}`
  const s = `{s${i % 4}}`
  const id = `call_${Math.random().toString(36).slice(2, 14)}`
  const keys = [`${s}:acct:${a}`, `${s}:agent:${a}:_owner`, `${s}:spent:${a}:20420`, `${s}:reqs:${a}:20420`, `${s}:rl:${a}:_owner:29405`,
    `${s}:rl:${a}:_owner:29404`, `${s}:call:${id}`, `${s}:outbox`, `${s}:inflight`]
  const argv = [String(1764444000000 + i), 'f'.repeat(64), '', 'bench.search', '5', '0', id, '600', '', '0', a, '300000', '20420']
  return { keys, argv }
}
const sha0 = (await redis.script('LOAD', 'return 0')) as string
const lean = `local out, k, a, n = {}, 0, 0, tonumber(ARGV[1])
local function one(KEYS, ARGV) return {0, 0} end
for i = 1, n do
  local nk, na = tonumber(ARGV[2 * i]), tonumber(ARGV[2 * i + 1])
  local ok, r = pcall(one, {unpack(KEYS, k + 1, k + nk)}, {unpack(ARGV, a + 2 + 2 * n, a + 1 + 2 * n + na)})
  k, a = k + nk, a + na
  out[i] = ok and r or redis.error_reply(tostring(r))
end
return out`
const shaLean = (await redis.script('LOAD', lean)) as string
type Reply = (string | number | null)[]
const single = async (keys: string[], argv: (string | number)[]) => (await redis.evalsha(sha0, keys.length, ...keys, ...argv)) as Reply
const wrapper = batchedCaller(redis as unknown as RedisClient, 'breakdown', 'return {0, 0}', 9, single, 32, 0)

const cases: Record<string, (i: number) => Promise<unknown>> = {
  plain2: async (i) => {
    const a = call(2 * i), b = call(2 * i + 1)
    await redis.pipeline().evalsha(sha0, 9, ...a.keys, ...a.argv).evalsha(sha0, 9, ...b.keys, ...b.argv).exec()
  },
  plain1: async (i) => {
    const a = call(2 * i)
    await redis.evalsha(sha0, 9, ...a.keys, ...a.argv)
  },
  concat0: async (i) => {
    const a = call(2 * i), b = call(2 * i + 1)
    await redis.evalsha(sha0, 18, ...a.keys, ...b.keys, ...a.argv, ...b.argv)
  },
  lean: async (i) => {
    const a = call(2 * i), b = call(2 * i + 1)
    await redis.evalsha(shaLean, 18, ...a.keys, ...b.keys, 2, 9, 13, 9, 13, ...a.argv, ...b.argv)
  },
  generic: async (i) => {
    const a = call(2 * i), b = call(2 * i + 1)
    await Promise.all([wrapper(a.keys, a.argv), wrapper(b.keys, b.argv)])
  },
}
for (const [name, run] of Object.entries(cases)) {
  if (only && !only.split(',').includes(name)) continue
  for (let i = 0; i < 20; i++) await run(i)
  control('-z')
  for (const f of dumps()) rmSync(join(out, f), { force: true })
  for (let i = 0; i < N; i++) await run(1000 + i)
  control('-d')
  const f = dumps().at(-1)!
  const summary = Number(/^summary: (\d+)/m.exec(readFileSync(join(out, f), 'utf8'))?.[1] ?? NaN)
  renameSync(join(out, f), join(out, `${name}.cg`))
  console.log(`${name}: ${Math.round(summary / N)} instructions a batch (${N} batches): ${join(out, `${name}.cg`)}`)
}
redis.disconnect()
proc.kill('SIGKILL')
await proc.exited
process.exit(0)
