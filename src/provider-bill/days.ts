/** UTC days as the reconciliation names them: `YYYY-MM-DD`. */
export const DAY_MS = 86_400_000

export const utcDate = (ms: number): string => new Date(ms).toISOString().slice(0, 10)

export const addDays = (day: string, n: number): string => utcDate(Date.parse(`${day}T00:00:00Z`) + n * DAY_MS)

/** A real calendar day written `YYYY-MM-DD` (2026-02-30 is not one). */
export const isUtcDate = (s: string): boolean => /^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(Date.parse(`${s}T00:00:00Z`)) && utcDate(Date.parse(`${s}T00:00:00Z`)) === s
