/**
 * Why a flush failed, in the three ways the flusher reacts to:
 * - `down`: Postgres did not answer (connection refused, reset, timed out, shutting down). Nothing
 *   is wrong with the entries: they wait and the round is retried with back-off.
 * - `poison`: Postgres refused the data itself (SQLSTATE class 22 data exception, 23 integrity
 *   violation, 54 a value past a limit), the entry has a kind no sink knows, or the sink could not
 *   even build its row (a TypeError, RangeError or SyntaxError thrown on the entry's fields: an
 *   invalid date, a field missing). Only such an error, reproduced with the entry tried alone,
 *   makes an entry a dead letter: a bad byte must never hold the ledger up.
 * - `held`: anything else (a deadlock, a server-side error of ours). Not the entry's fault, so
 *   nothing is dead-lettered, but not an outage either: the shard's batch waits, the others go on.
 */
export type FlushFailure = 'down' | 'poison' | 'held'

/** An entry the flusher cannot even turn into a row (no sink for its kind). */
export class PoisonEntry extends Error {}

interface PgError {
  code: string
  message: string
}

/**
 * The error Postgres raised, wherever the driver or drizzle wrapped it (drizzle's DrizzleQueryError
 * keeps it as `cause`, with the whole query and its parameters in its own message).
 */
function postgresError(e: unknown): PgError | null {
  for (let cur = e, depth = 0; cur && typeof cur === 'object' && depth < 5; cur = (cur as { cause?: unknown }).cause, depth++) {
    const { code, severity, message } = cur as { code?: unknown; severity?: unknown; message?: unknown }
    // The severity tells a server's error from a Node socket error whose code is five letters (EPIPE).
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && typeof severity === 'string') return { code, message: String(message) }
  }
  return null
}

const CONNECTION_CODE = /^(E[A-Z_]+|ERR_[A-Z_]+|CONNECT[A-Z_]*)$/

function connectionCode(e: unknown): boolean {
  for (let cur = e, depth = 0; cur && typeof cur === 'object' && depth < 5; cur = (cur as { cause?: unknown }).cause, depth++) {
    const code = (cur as { code?: unknown }).code
    if (typeof code === 'string' && CONNECTION_CODE.test(code)) return true
  }
  return false
}

export function classifyFlushError(e: unknown): FlushFailure {
  if (e instanceof PoisonEntry) return 'poison'
  const pg = postgresError(e)
  if (pg) {
    const cls = pg.code.slice(0, 2)
    if (cls === '22' || cls === '23' || cls === '54') return 'poison'
    // 08 connection exception, 53 insufficient resources, 57 operator intervention (shutdown), 58 system error.
    if (cls === '08' || cls === '53' || cls === '57' || cls === '58') return 'down'
    return 'held'
  }
  if (connectionCode(e)) return 'down'
  // Thrown while turning the entry's fields into a row: the data is the cause, and it is the same
  // every time this entry is tried.
  if (e instanceof TypeError || e instanceof RangeError || e instanceof SyntaxError) return 'poison'
  return 'held'
}

/** One line for the dead letter: the SQLSTATE and Postgres' own message, never the query text. */
export function describeFlushError(e: unknown): string {
  const pg = postgresError(e)
  const line = pg ? `${pg.code}: ${pg.message}` : e instanceof Error ? e.message : String(e)
  return line.replace(/\s+/g, ' ').slice(0, 500)
}
