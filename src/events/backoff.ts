/**
 * When a failed delivery is tried again: exponential backoff from 10 s, doubling up to 4 h between
 * attempts, ±10 % jitter (receivers coming back are not hit by every sender at the same second),
 * for one day after the event; the last attempt lands on the day mark, then the delivery gives up.
 * Times are on the app clock, so tests move it instead of waiting.
 */
export const RETRY_FOR_MS = 24 * 3600_000
const FIRST_DELAY_MS = 10_000
const MAX_DELAY_MS = 4 * 3600_000

/** Delay before the next attempt, after `attempts` failed ones (≥ 1). */
export function retryDelay(attempts: number, random: () => number = Math.random): number {
  const base = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** Math.min(attempts - 1, 20))
  return Math.round(base * (0.9 + 0.2 * random()))
}

/** The next attempt's time, or null when the day is over (give up). */
export function nextAttemptAt(createdAt: number, attempts: number, now: number): number | null {
  const deadline = createdAt + RETRY_FOR_MS
  if (now >= deadline) return null
  return Math.min(now + retryDelay(attempts), deadline)
}
