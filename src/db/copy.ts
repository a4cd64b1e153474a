/**
 * COPY … FROM STDIN (text format) inside the caller's transaction: the cheapest way a batch of new
 * rows gets into Postgres — no statement to parse or plan, no JSON to read, the heap filled a page
 * at a time (bench/RESULTS.md, "Postgres per paid call"). Only on the postgres-js driver: on
 * PGlite `copyRows` answers false and the caller inserts instead.
 * errors: whatever Postgres refuses throws, and the caller's transaction can only roll back.
 */
import { is } from 'drizzle-orm'
import { PostgresJsSession } from 'drizzle-orm/postgres-js'
import type { Sql } from 'postgres'
import type { Writable } from 'node:stream'
import type { Database } from './client'

/** A column's value as the row builders give it; null (and a number JSON could not write) is SQL NULL. */
export type CopyValue = string | number | boolean | null | undefined | object

/** One value in COPY's text format: `\N` for null, and the four characters the format gives a meaning escaped. */
export function copyText(v: CopyValue): string {
  if (typeof v === 'string') return SPECIAL.test(v) ? v.replace(SPECIALS, (c) => ESCAPES[c]!) : v
  if (v === null || v === undefined) return '\\N'
  // As JSON would carry it (the insert path): a non-finite number is null, a nested value its JSON text.
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : '\\N'
  if (typeof v === 'boolean') return v ? 't' : 'f'
  return copyText(JSON.stringify(v))
}

const SPECIAL = /[\\\n\r\t]/
const SPECIALS = /[\\\n\r\t]/g
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' }

/**
 * The rows as one COPY text body: a line a row, tab between columns. The lines are joined once: one
 * string of ~40 pieces a row grown by `+=` is a rope the socket write flattens again (~0.3 µs a row).
 */
export function copyBody(rows: readonly (readonly CopyValue[])[]): string {
  const lines = new Array<string>(rows.length + 1)
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r]!
    let line = row.length === 0 ? '' : copyText(row[0])
    for (let i = 1; i < row.length; i++) line += '\t' + copyText(row[i])
    lines[r] = line
  }
  lines[rows.length] = ''
  return lines.join('\n')
}

/** The postgres-js client under a drizzle handle (a transaction's own), or null on another driver. */
function postgresJs(db: Database): Sql | null {
  const session = db._.session
  return is(session, PostgresJsSession) ? (session.client as Sql) : null
}

/**
 * Writes `rows` into `table` (`columns` in the rows' order) with COPY, in `tx`'s transaction.
 * Resolves once Postgres has taken every row; false when the driver has no COPY (PGlite).
 */
export async function copyRows(tx: Database, table: string, columns: readonly string[], rows: readonly (readonly CopyValue[])[]): Promise<boolean> {
  const client = postgresJs(tx)
  if (!client) return false
  if (rows.length === 0) return true
  const body = copyBody(rows)
  const query = client.unsafe(`copy ${table} (${columns.join(', ')}) from stdin`)
  const stream = (await query.writable()) as Writable
  await sendAll(query as unknown as DriverQuery, stream, body)
  return true
}

/** What `sendAll` reaches of the driver's query and stream: the steps they were built with. */
interface DriverQuery {
  reject(e: unknown): void
}
interface DriverSteps {
  _final(cb: (e?: Error | null) => void): void
  _destroy(e: Error | null, cb: (e?: Error | null) => void): void
}

/**
 * Ends the stream with `body`; resolves once Postgres took the rows ('finish': the COPY's command
 * completed), rejects with Postgres' own error when it refused them, or with the connection's.
 */
function sendAll(query: DriverQuery, stream: Writable, body: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    // postgres-js (3.4.x) reports rows refused after the end of the data only to the query, whose
    // promise has long resolved to this stream, and never settles the stream: without this, the
    // wait would never end, and a COMMIT of the aborted transaction answers ROLLBACK, no error.
    query.reject = reject
    stream.once('error', reject)
    stream.once('finish', resolve)
    const steps = stream as unknown as DriverSteps
    const final = steps._final
    steps._final = (cb) => {
      final.call(stream, cb)
      // The end of the data is sent. The driver's destroy step sends a CopyFail, and the stream
      // destroys itself after 'finish': that CopyFail could fall into the transaction's next COPY.
      steps._destroy = (e, done) => done(e)
    }
    stream.end(body)
  })
}
