/**
 * What ioredis' `defineCommand` costs the client beyond the commands themselves: every auto-pipeline
 * ioredis makes (one per turn of the event loop per connection) copies each defined command, and its
 * `…Buffer` twin, onto itself. The service registered its 32 scripts that way until issue 42; it now
 * calls them by EVALSHA (src/redis/variable-keys.ts). Two clients of the service's settings, one with
 * the 32 scripts defined and one with none, send the same GETs in turns of 1 to 8 commands; the
 * client process' CPU per command (user + system), the clients interleaved round by round.
 *
 *   ./node_modules/.bin/bun bench/ioredis-defined-commands.ts [--rounds 7] [--turns 3000] [--no-write]
 *
 * Needs Redis at BENCH_REDIS_URL (default redis://127.0.0.1:6379).
 */
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import type Redis from 'ioredis'
import { createRedis } from '../src/redis/client'
import { readScripts } from '../src/redis/scripts'
import { median } from './lib/ratios'
import { replaceSection } from './lib/sections'

const { values: opt } = parseArgs({
  options: {
    rounds: { type: 'string', default: '7' },
    turns: { type: 'string', default: '3000' },
    'no-write': { type: 'boolean', default: false },
  },
})
const ROUNDS = Number(opt.rounds)
const TURNS = Number(opt.turns)
const URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
const RESULTS = join(import.meta.dir, 'RESULTS.md')
const TITLE = '## ioredis: the cost of defined commands to every auto-pipeline (issue 42)'
const END = '<!-- ioredis-defined-commands:end -->'

const client = (define: boolean) => {
  const r = createRedis({ REDIS_URL: URL }) as Redis
  if (define) for (const s of readScripts()) r.defineCommand(s.name, { numberOfKeys: s.numberOfKeys ?? undefined, lua: s.lua })
  return r
}
const defined = client(true)
const none = client(false)

/** µs of this process' CPU per command: `turns` turns of `per` GETs sent together. */
async function cpuPerCommand(r: Redis, per: number, turns = TURNS): Promise<number> {
  const keys = Array.from({ length: per }, (_, k) => `{bench}:defined:${k}`)
  const t = process.cpuUsage()
  for (let i = 0; i < turns; i++) await Promise.all(keys.map((k) => r.get(k)))
  const u = process.cpuUsage(t)
  return (u.user + u.system) / (turns * per)
}

const rows: string[] = []
for (const per of [1, 2, 4, 8]) {
  await cpuPerCommand(defined, per, 300)
  await cpuPerCommand(none, per, 300)
  const a: number[] = []
  const b: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    a.push(await cpuPerCommand(defined, per))
    b.push(await cpuPerCommand(none, per))
  }
  const [ma, mb] = [median(a), median(b)]
  rows.push(`| ${per} | ${ma.toFixed(2)} | ${mb.toFixed(2)} | ${(mb / ma).toFixed(2)}× |`)
}
defined.disconnect()
none.disconnect()

const section = [
  TITLE,
  '',
  `Command: \`./node_modules/.bin/bun bench/ioredis-defined-commands.ts --rounds ${ROUNDS} --turns ${TURNS}\``,
  '',
  `Run at ${new Date().toISOString()} (load average before: ${(await import('node:os')).loadavg()[0]!.toFixed(2)}). µs of the client process' CPU per GET, median of ${ROUNDS} interleaved rounds of ${TURNS} turns.`,
  '',
  '| commands a turn | 32 scripts defined | none defined | none / defined |',
  '|---:|---:|---:|---:|',
  ...rows,
  END,
].join('\n')
if (opt['no-write']) console.log(section)
else replaceSection(RESULTS, TITLE, END, section)
