/** Public status and counters. Neither needs a bearer; neither reveals an account. */
import { sql } from 'drizzle-orm'
import { SHARDS } from '../../redis/keys'
import type { Services } from '../../services'
import { VERSION } from '../../version'


const withTimeout = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, new Promise<never>((_, rej) => setTimeout(() => rej(new Error('timeout')), ms))])

export async function serviceStatus(s: Services) {
  const { redis, keys } = s.ctx
  const [redisOk, pgOk, lag, signupsPaused, reasons] = await Promise.all([
    withTimeout(redis.ping(), 1000).then(() => true, () => false),
    withTimeout(s.db.db.execute(sql`select 1`), 1000).then(() => true, () => false),
    withTimeout(s.flusher.lag(), 1000).catch(() => ({ entries: -1, oldest_ms: -1 })),
    withTimeout(redis.exists(keys.signupsPaused()), 1000).catch(() => 0),
    withTimeout(s.health.reasons(), 1000).catch(() => []),
  ])
  const states = s.catalog.byState()
  return {
    status: redisOk && pgOk && reasons.length === 0 ? ('ok' as const) : ('degraded' as const),
    degraded: reasons,
    version: VERSION,
    redis: redisOk ? ('ok' as const) : ('down' as const),
    postgres: pgOk ? ('ok' as const) : ('down' as const),
    ledger_lag: lag,
    signups: signupsPaused ? ('paused' as const) : ('open' as const),
    payments: s.payments.mode,
    paused: states.paused,
    unavailable: states.unavailable,
  }
}

export async function publicStats(s: Services) {
  const { redis, keys } = s.ctx
  const rows = await Promise.all(
    Array.from({ length: SHARDS }, (_, i) => redis.hmget(keys.stats(i), 'organic_calls_routed', 'credits_honored')),
  )
  return {
    organic_calls_routed: rows.reduce((a, [n]) => a + Number(n ?? 0), 0),
    credits_honored: rows.reduce((a, [, c]) => a + Number(c ?? 0), 0),
  }
}
