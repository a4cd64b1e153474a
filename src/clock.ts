/**
 * The one clock. Scripts never read Redis TIME: "now" is passed in from here, so tests can place
 * calls on either side of the HKT midnight and expire vault links without sleeping.
 */
export interface Clock {
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  constructor(private ms: number = Date.now()) {}
  now(): number {
    return this.ms
  }
  set(ms: number): void {
    this.ms = ms
  }
  advance(ms: number): void {
    this.ms += ms
  }
}

const HKT_OFFSET_MS = 8 * 3600 * 1000
const DAY_MS = 86400 * 1000

/** Days since the epoch in Hong Kong time (UTC+8): the window of daily caps. */
export function hktDay(ms: number): number {
  return Math.floor((ms + HKT_OFFSET_MS) / DAY_MS)
}

/** Epoch ms of the next 00:00 HKT after `ms`. */
export function nextHktMidnight(ms: number): number {
  return (hktDay(ms) + 1) * DAY_MS - HKT_OFFSET_MS
}

/** HKT calendar month as `YYYY-MM`: the period of the auto-refill ceiling. */
export function hktMonth(ms: number): string {
  return new Date(ms + HKT_OFFSET_MS).toISOString().slice(0, 7)
}

/** Epoch ms of 00:00 HKT on the first day of HKT month `YYYY-MM`. */
export function hktMonthStart(month: string): number {
  const [y, m] = month.split('-').map(Number) as [number, number]
  return Date.UTC(y, m - 1, 1) - HKT_OFFSET_MS
}

/** Epoch ms of the next HKT month's first 00:00 after `ms`: when the refill ceiling's period resets. */
export function nextHktMonthStart(ms: number): number {
  const d = new Date(ms + HKT_OFFSET_MS)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) - HKT_OFFSET_MS
}

/** The HKT month before `YYYY-MM`. */
export function previousHktMonth(month: string): string {
  return hktMonth(hktMonthStart(month) - 1)
}

/**
 * An epoch-ms → ISO-instant formatter that keeps the last one it made: the calls and entries of a
 * turn mostly share a millisecond, so most ask for the same string again (a Date and its toISOString
 * each time otherwise). One per caller, so two callers' instants do not push each other out. An
 * instant that is no time throws RangeError, as toISOString does (NaN never equals the last one).
 */
export function isoInstants(): (ms: number) => string {
  let lastMs = NaN
  let lastIso = ''
  return (ms) => {
    if (ms !== lastMs) {
      lastIso = new Date(ms).toISOString()
      lastMs = ms
    }
    return lastIso
  }
}
