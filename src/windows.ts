/** The time windows of the ledger keys, all derived from one `now`. */
import { hktDay, nextHktMidnight } from './clock'

export const RATE_WINDOW_MS = 60_000

export function windowsAt(now: number) {
  const rate = Math.floor(now / RATE_WINDOW_MS)
  return {
    day: hktDay(now),
    rate,
    prevRate: rate - 1,
    /** Read only by a refusal: formatting it cost every paid request a toISOString. */
    get resetsAt() {
      return new Date(nextHktMidnight(now)).toISOString()
    },
  }
}

/** Standard rate-limit headers (IETF draft RateLimit-*), plus Retry-After on a rejection. */
export function rateHeaders(limit: number, remaining: number, msToReset: number): Record<string, string> {
  return {
    'ratelimit-limit': String(limit),
    'ratelimit-remaining': String(Math.max(0, remaining)),
    'ratelimit-reset': String(Math.ceil(msToReset / 1000)),
  }
}
