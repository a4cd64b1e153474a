import type { Clock } from '../clock'
import type { Config } from '../config'
import type { RedisClient } from '../redis/client'
import type { Keys } from '../redis/keys'
import type { Scripts } from '../redis/scripts'

/** What every ledger service needs: the primary ledger, its key schema and scripts, the clock. */
export interface LedgerContext {
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

/** Day-windowed keys live two days: long enough for a refund that crosses midnight. */
export const DAY_KEY_TTL_S = 2 * 86400

export const SIGNUP_CREDITS = 500
export const REFERRAL_CREDITS = 500
/** How many recent calls Redis keeps per account for /v1/activity; older ones come from Postgres. */
export const RECENT_CALLS = 200
