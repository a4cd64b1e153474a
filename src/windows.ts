/** The time windows of the ledger keys, all derived from one `now`. */
import { hktDay, nextHktMidnight } from './clock'

export const RATE_WINDOW_MS = 60_000

/** A class, not an object literal: a literal's getter is a new function each paid request. */
class Windows {
  readonly day: number
  readonly rate: number
  readonly prevRate: number
  constructor(private readonly now: number) {
    this.day = hktDay(now)
    this.rate = Math.floor(now / RATE_WINDOW_MS)
    this.prevRate = this.rate - 1
  }
  /** Read only by a refusal: formatting it cost every paid request a toISOString. */
  get resetsAt(): string {
    return new Date(nextHktMidnight(this.now)).toISOString()
  }
}

export function windowsAt(now: number): Windows {
  return new Windows(now)
}

/** Standard rate-limit headers (IETF draft RateLimit-*), plus Retry-After on a rejection. */
export function rateHeaders(limit: number, remaining: number, msToReset: number): Record<string, string> {
  return {
    'ratelimit-limit': String(limit),
    'ratelimit-remaining': String(Math.max(0, remaining)),
    'ratelimit-reset': String(Math.ceil(msToReset / 1000)),
  }
}
