/** The rows of a raw `db.execute`, whichever driver ran it: postgres-js answers an array, PGlite `{ rows }`. */
export const rowsOf = <T = Record<string, unknown>>(result: unknown): T[] =>
  (Array.isArray(result) ? result : ((result as { rows?: unknown[] }).rows ?? [])) as T[]
