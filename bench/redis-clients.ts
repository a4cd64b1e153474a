/**
 * ioredis against Bun's own Redis client (`RedisClient` from "bun", written in Zig), for the one
 * thing the hot path asks of a client: an EVALSHA with many arguments, auto-pipelined. Issue 17
 * keeps ioredis "unless a measured replacement serves both single Redis and Cluster"; this measures
 * the first half (Bun's client has no Cluster mode, so it could only ever take the single-Redis path).
 *
 * The script is a trivial one (it returns its first key and argument), so what is measured is the
 * client: building the command, writing it, parsing the reply, settling the promise. Per shape and
 * client: ops/s and the client process' CPU per op (user + system, process.cpuUsage), the clients
 * interleaved round by round on the same Redis. Shapes:
 *   call      one flat call's debit: 8 keys + 20 args, 64 in flight (a saturated service)
 *   batch     one turn's batched debit of 16 calls: 8 keys + 440 args, 4 in flight
 *   alone     one call's debit with nothing else in flight: the round trip's latency, p50 and p99
 *
 *   ./node_modules/.bin/bun bench/redis-clients.ts [--rounds 3] [--ops 100000] [--no-write]
 *
 * Needs Redis at BENCH_REDIS_URL (default redis://127.0.0.1:6379).
 */
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { RedisClient } from 'bun'
import { createRedis } from '../src/redis/client'
import { median } from './lib/ratios'
import { replaceSection } from './lib/sections'

const { values: opt } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    ops: { type: 'string', default: '100000' },
    'no-write': { type: 'boolean', default: false },
  },
})
const ROUNDS = Number(opt.rounds)
const OPS = Number(opt.ops)
const URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
const RESULTS = join(import.meta.dir, 'RESULTS.md')
const TITLE = '## Redis clients: ioredis against Bun\'s own (issue 17)'
const END = '<!-- redis-clients:end -->'

// The service's own ioredis, as it is configured (auto-pipelining, the tracing fix of bun-tracing.ts).
const io = createRedis({ REDIS_URL: URL, REDIS_CLUSTER_NODES: '' })
const bun = new RedisClient(URL, { enableAutoPipelining: true })
await bun.connect()
const sha = (await io.script('LOAD', 'return {KEYS[1], ARGV[1]}')) as string

interface Shape {
  name: string
  args: number
  inFlight: number
  /** Ops of this shape a round, as a share of --ops (a batch carries 16 calls' arguments). */
  share: number
}
const SHAPES: Shape[] = [
  { name: 'call', args: 20, inFlight: 64, share: 1 },
  { name: 'batch', args: 440, inFlight: 4, share: 1 / 16 },
  { name: 'alone', args: 20, inFlight: 1, share: 1 / 5 },
]
const KEYS = Array.from({ length: 8 }, (_, i) => `{bench}:acct:a_${i}`)
const argsOf = (n: number) => Array.from({ length: n }, (_, i) => (i % 3 ? `${1_700_000_000_000 + i}` : `proxy:openai/gpt-4o-mini-${i}`))

type Call = () => Promise<unknown>
const callers = (s: Shape): Record<'ioredis' | 'bun', Call> => {
  const args = argsOf(s.args)
  const flat = [sha, String(KEYS.length), ...KEYS, ...args]
  return {
    ioredis: () => io.evalsha(sha, KEYS.length, ...KEYS, ...args),
    bun: () => bun.send('EVALSHA', flat),
  }
}

interface Run {
  opsPerSec: number
  cpuPerOp: number
  p50: number
  p99: number
}

async function measure(call: Call, ops: number, inFlight: number): Promise<Run> {
  for (let i = 0; i < 200; i++) await call()
  const lat: number[] = []
  let issued = 0
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (issued++ < ops) {
        const s = performance.now()
        await call()
        lat.push(performance.now() - s)
      }
    }),
  )
  const wall = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  lat.sort((a, b) => a - b)
  return { opsPerSec: (ops / wall) * 1000, cpuPerOp: (cpu.user + cpu.system) / ops, p50: lat[Math.floor(lat.length / 2)]! * 1000, p99: lat[Math.floor(lat.length * 0.99)]! * 1000 }
}

const runs: Record<string, Run[]> = {}
for (let round = 1; round <= ROUNDS; round++) {
  for (const s of SHAPES) {
    const c = callers(s)
    // Which client goes first alternates, so neither always gets the warmer machine.
    const order = round % 2 ? (['ioredis', 'bun'] as const) : (['bun', 'ioredis'] as const)
    for (const client of order) {
      const r = await measure(c[client], Math.round(OPS * s.share), s.inFlight)
      ;(runs[`${s.name}|${client}`] ??= []).push(r)
      console.log(`round ${round} ${s.name} ${client}: ${r.opsPerSec.toFixed(0)} ops/s, ${r.cpuPerOp.toFixed(2)} µs CPU/op, p50 ${r.p50.toFixed(0)} µs, p99 ${r.p99.toFixed(0)} µs`)
    }
  }
}
io.disconnect()
bun.close()

const med = (key: string, f: (r: Run) => number) => median(runs[key]!.map(f))
const fmt = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d })
const rows = SHAPES.map((s) => {
  const [i, b] = [`${s.name}|ioredis`, `${s.name}|bun`]
  return `| ${s.name}: ${s.args + KEYS.length} strings, ${s.inFlight} in flight | ${fmt(med(i, (r) => r.opsPerSec))} | ${fmt(med(b, (r) => r.opsPerSec))} | ${fmt(med(i, (r) => r.cpuPerOp), 1)} | ${fmt(med(b, (r) => r.cpuPerOp), 1)} | ${(med(b, (r) => r.cpuPerOp) / med(i, (r) => r.cpuPerOp)).toFixed(2)}× | ${fmt(med(i, (r) => r.p50))} / ${fmt(med(i, (r) => r.p99))} | ${fmt(med(b, (r) => r.p50))} / ${fmt(med(b, (r) => r.p99))} |`
})
const section = [
  TITLE,
  '',
  `Command: \`./node_modules/.bin/bun bench/redis-clients.ts --rounds ${ROUNDS} --ops ${OPS}\``,
  '',
  `Run at ${new Date().toISOString()}, Bun ${Bun.version}. One EVALSHA of a trivial script (the client's work alone), the two clients interleaved round by round on the same Redis; medians of ${ROUNDS} rounds. CPU is the client process' (user + system) per op.`,
  '',
  '| Shape | ioredis ops/s | Bun ops/s | ioredis µs CPU/op | Bun µs CPU/op | Bun / ioredis CPU | ioredis p50 / p99 µs | Bun p50 / p99 µs |',
  '|---|---:|---:|---:|---:|---:|---:|---:|',
  ...rows,
  END,
].join('\n')
console.log('\n' + section)
if (!opt['no-write']) replaceSection(RESULTS, TITLE, END, section)
process.exit(0)
