/**
 * The /status probe of the write-behind: `ledger_lag` while the outbox holds more than
 * STATUS_MAX_LAG_ENTRIES entries or its oldest is older than STATUS_MAX_LAG_MS (Postgres is behind),
 * `dead_letters` while more than STATUS_MAX_DEAD_LETTERS entries Postgres refused wait for the
 * founder (any, by default: a refused entry is money or a record missing from Postgres).
 */
import type { Config } from '../config'
import type { DegradedReason, HealthProbe } from '../health'
import type { Flusher } from './flusher'

type Limits = Pick<Config, 'STATUS_MAX_LAG_ENTRIES' | 'STATUS_MAX_LAG_MS' | 'STATUS_MAX_DEAD_LETTERS'>

export function ledgerHealthProbe(flusher: Flusher, cfg: Limits): HealthProbe {
  return async () => {
    const [lag, dead] = await Promise.all([flusher.lag(), flusher.deadLetters()])
    const out: DegradedReason[] = []
    if (lag.entries > cfg.STATUS_MAX_LAG_ENTRIES || lag.oldest_ms > cfg.STATUS_MAX_LAG_MS)
      out.push({
        reason: 'ledger_lag',
        detail: `${lag.entries} outbox entries wait for Postgres, the oldest for ${Math.round(lag.oldest_ms / 1000)} s; they drain once Postgres keeps up`,
      })
    if (dead > cfg.STATUS_MAX_DEAD_LETTERS)
      out.push({
        reason: 'dead_letters',
        detail: `${dead} outbox entries Postgres refused wait in the dead letters; review GET /admin/dead-letters, then replay or discard each`,
      })
    return out.length > 0 ? out : null
  }
}
