/**
 * The manual clock starts at the wall clock's time, so a test that steps across a day or a month
 * without meaning to fails only when the run starts near 00:00 HKT or a month's end. A test that
 * counts on staying inside one window, or on crossing one, first moves its clock (forward) there.
 * Forward by as little as it can: the Stripe fake stamps its objects with the wall clock, and the
 * charge look-up reads from a month before the app clock's.
 */
import { nextHktMidnight, nextHktMonthStart, type ManualClock } from '../../src/clock'

const HOUR_MS = 3600_000

/** 12:00 HKT of the next HKT day: twelve hours either side before a day window turns. */
export function toHktNoon(clock: ManualClock): void {
  clock.set(nextHktMidnight(clock.now()) + 12 * HOUR_MS)
}

/** Within three days of an HKT month's end, 12:00 HKT on the next month's 1st; otherwise where it is. */
export function awayFromHktMonthEnd(clock: ManualClock): void {
  const next = nextHktMonthStart(clock.now())
  if (next - clock.now() < 72 * HOUR_MS) clock.set(next + 12 * HOUR_MS)
}

/** `ms` before the next HKT month's first 00:00 (the one after, when that is already closer). */
export function beforeHktMonthEnd(clock: ManualClock, ms: number): void {
  const next = nextHktMonthStart(clock.now())
  clock.set(next - ms > clock.now() ? next - ms : nextHktMonthStart(next) - ms)
}
