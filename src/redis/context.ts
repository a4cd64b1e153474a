import type { Clock } from '../clock'
import type { Config } from '../config'
import type { RedisClient } from './client'
import type { Keys } from './keys'
import type { Scripts } from './scripts'

/**
 * The shared Redis context every service over the primary ledger takes: the client, the key schema,
 * the loaded scripts, the clock (scripts are always given `now`) and the config.
 */
export interface RedisContext {
  redis: RedisClient
  keys: Keys
  scripts: Scripts
  clock: Clock
  cfg: Config
  /**
   * Called (fire-and-forget) when a debit leaves the balance under the enabled mandate's threshold,
   * or finds it too low: starts the background auto-refill. Set by services.ts; every caller of
   * debit() (the call path and the proxy) gets the trigger without knowing about it.
   */
  onRefillDue?: (accountId: string) => void
}
