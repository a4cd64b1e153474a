/**
 * The ceiling under the paid call: `redis-benchmark` running the debit script itself (EVALSHA)
 * against a prepared account, with nothing in front of it. The keys and arguments are the ones the
 * service would send: `debit()` builds them and a capturing stand-in of the script records them
 * instead of calling Redis, so this follows the script whatever its key count becomes. The call
 * id varies per request (`__rand_int__`), so every run really debits (a repeated call id would
 * hit the script's resend guard and write nothing).
 *
 * The account lives under its own key prefix, which no service reads and no flusher drains.
 */
import type { Principal } from '../../src/auth/principal'
import { hashToken, newToken } from '../../src/auth/tokens'
import { systemClock } from '../../src/clock'
import { parseConfig } from '../../src/config'
import { createAccount, newAccountId } from '../../src/ledger/accounts'
import type { RedisContext } from '../../src/redis/context'
import { debit } from '../../src/paid-request/debit'
import { createRedis, masters } from '../../src/redis/client'
import { Keys } from '../../src/redis/keys'
import { loadScripts, readScripts, type Scripts } from '../../src/redis/scripts'

export interface EvalshaResult {
  label: string
  clients: number
  pipeline: number
  requests: number
  reqPerSec: number
  p50: number
  p99: number
  p999: number
}

const HUGE = '1000000000000000'

/** The debit script's EVALSHA command line for a fresh funded account on the Redis at `url`. */
async function prepare(url: string, price: number) {
  const prefix = `benchraw${Math.random().toString(36).slice(2, 8)}`
  const cfg = parseConfig({ REDIS_URL: url, REDIS_KEY_PREFIX: prefix, RATE_LIMIT_PER_TOKEN: '1000000000', DEFAULT_DAILY_CAP: HUGE, DEFAULT_BALANCE_CAP: HUGE })
  const redis = createRedis(cfg)
  const scripts = loadScripts(redis)
  const ctx: RedisContext = { redis, keys: new Keys(prefix), scripts, clock: systemClock, cfg }
  const accountId = newAccountId(null)
  const token = newToken('owner')
  await createAccount(ctx, accountId, { email: `raw-${prefix}@example.com`, origin: 'bench', ownerTokenHash: hashToken(token), referrerId: null })
  await redis.hset(ctx.keys.account(accountId), 'balance', HUGE)

  let captured: { keys: string[]; argv: (string | number)[] } | null = null
  const capturing: Scripts = {
    ...scripts,
    debit: async (keys, argv) => {
      captured = { keys, argv }
      return [0, 0, '', 0, 0]
    },
  }
  const principal: Principal = { accountId, agentId: null, tokenHash: hashToken(token) }
  await debit({ ...ctx, scripts: capturing }, { principal, target: 'bench.search', price, unpriced: false })
  const { keys, argv } = captured! as { keys: string[]; argv: (string | number)[] }
  const script = readScripts().find((s) => s.name === 'debit')!
  const sha = String(await redis.script('LOAD', script.lua))
  // Every occurrence of the call id (the call record key, the argument) becomes a random number.
  const callId = String(argv.find((a) => String(a).startsWith('call_')))
  const vary = (s: string | number) => String(s).split(callId).join('call___rand_int__')
  const command = ['EVALSHA', sha, String(keys.length), ...keys.map(vary), ...argv.map(vary)]
  return {
    command,
    script: script.file,
    async cleanup() {
      for (const node of masters(redis)) {
        let cursor = '0'
        do {
          const [next, batch] = await node.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
          cursor = next
          if (batch.length) await batch.reduce((p, k) => p.unlink(k), node.pipeline()).exec()
        } while (cursor !== '0')
      }
      redis.disconnect()
    },
  }
}

/** redis-benchmark's text summary: throughput, the latency summary line, p99.9 from the distribution. */
function parseSummary(out: string): { rps: number; p50: number; p99: number; p999: number } {
  const rps = Number(/throughput summary: ([\d.]+) requests per second/.exec(out)?.[1])
  const lat = /avg\s+min\s+p50\s+p95\s+p99\s+max\s*\n\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)/.exec(out)
  if (!rps || !lat) throw new Error(`unexpected redis-benchmark output: ${out.slice(-500)}`)
  let p999 = NaN
  const dist = out.slice(out.indexOf('Latency by percentile distribution'))
  for (const m of dist.matchAll(/([\d.]+)% <= ([\d.]+) milliseconds/g))
    if (Number(m[1]) >= 99.9) {
      p999 = Number(m[2])
      break
    }
  return { rps, p50: Number(lat[3]), p99: Number(lat[5]), p999 }
}

export async function evalshaCeiling(url: string, price: number, runs: { clients: number; pipeline: number; requests: number }[]): Promise<{ script: string; results: EvalshaResult[] }> {
  const u = new URL(url)
  const p = await prepare(url, price)
  const results: EvalshaResult[] = []
  try {
    for (const r of runs) {
      const base = ['redis-benchmark', '-h', u.hostname, '-p', u.port || '6379', '-c', String(r.clients), '-n', String(r.requests), '-P', String(r.pipeline), '-r', '1000000000']
      const proc = Bun.spawn([...base, ...p.command], { stdout: 'pipe', stderr: 'pipe' })
      const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited])
      if (code !== 0) throw new Error(`redis-benchmark exited with ${code}: ${await new Response(proc.stderr).text()}`)
      const { rps, p50, p99, p999 } = parseSummary(out)
      results.push({ label: `EVALSHA ${p.script}`, ...r, reqPerSec: rps, p50, p99, p999 })
    }
  } finally {
    await p.cleanup()
  }
  return { script: p.script, results }
}
