/**
 * The ledger statement (GET /v1/ledger, the console's "download statement"): every ledger entry of
 * one account with `from ≤ at < to`, framed by an opening and a closing balance that reconcile
 * (opening + Σ amounts = closing).
 *
 * It reads the Postgres copy, which the flusher writes behind Redis: entries still in the outbox are
 * not in it yet (the route reports that lag). The opening balance is the sum of every flushed entry
 * before `from` (the account's first entry is its signup grant, so the sum is the balance); the
 * closing one is the opening plus the entries actually streamed, so the statement reconciles even
 * when the flusher commits while it is read.
 *
 * Rows are read in keyset pages, in write order (the outbox stream id, which orders one account's
 * entries exactly: they all go through one shard's stream), so a year of entries never sits in
 * memory.
 * errors: BAD_REQUEST (from, to, format).
 */
import { sql, type SQL } from 'drizzle-orm'
import type { Database } from '../db/client'
import { ApiError } from '../errors'
import type { RedisContext } from '../redis/context'
import { rowsOf } from '../db/rows'
import { withCacheWrites, type TokenCounts } from '../metering/usage'

export type StatementFormat = 'jsonl' | 'csv'

export interface StatementRange {
  from: Date
  to: Date
}

export interface StatementEntry {
  id: string
  at: string
  kind: string
  amount: number
  balance_after: number
  call_id: string | null
  agent_id: string | null
  route_or_slug: string | null
  /** A metered call's model (its debit and its settle) and tokens (its settle, docs/api.md §7); else null. */
  model: string | null
  tokens: TokenCounts | null
}

/** Rows per keyset page: bounded memory whatever the range. */
export const STATEMENT_PAGE = 500

// YYYY-MM-DD, or a full date-time with a zone (Z or ±hh:mm): a zoneless time would be read in the
// server's zone, and a statement must not depend on where it is printed.
const ISO = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2}))?$/

/**
 * Whether YYYY-MM-DD names a day of the calendar: Date.parse rolls 2025-02-31 over into March, and
 * gives no date at all for month 13 or day 32 (whose toISOString threw: a 500).
 */
function realDay(date: string): boolean {
  const ms = Date.parse(`${date}T00:00:00Z`)
  return !Number.isNaN(ms) && new Date(ms).toISOString().slice(0, 10) === date
}

// The instants a statement can name: Postgres reads no year 0 and no "+010000-…" (a zone offset
// can carry 9999-12-31 past it). Outside them the query failed after the 200 had been sent.
const FIRST_MS = Date.parse('0001-01-01T00:00:00Z')
const LAST_MS = Date.parse('9999-12-31T23:59:59.999Z')

function instant(raw: string | undefined, field: string, fallback: Date): Date {
  if (raw === undefined || raw === '') return fallback
  const ms = ISO.test(raw) && realDay(raw.slice(0, 10)) ? Date.parse(raw) : NaN
  if (Number.isNaN(ms)) throw new ApiError('BAD_REQUEST', { field, expected: 'an ISO 8601 date (2025-01-31, read as 00:00 UTC) or date-time with a zone (2025-01-31T08:00:00Z)' })
  if (ms < FIRST_MS || ms > LAST_MS) throw new ApiError('BAD_REQUEST', { field, expected: 'a time from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z' })
  return new Date(ms)
}

/** `from` defaults to the beginning, `to` to just after now; `to` is exclusive. */
export function statementRange(q: { from?: string; to?: string }, now: number): StatementRange {
  const from = instant(q.from, 'from', new Date(0))
  // Without `to`, everything up to and including this millisecond.
  const to = instant(q.to, 'to', new Date(now + 1))
  if (to < from) throw new ApiError('BAD_REQUEST', { field: 'to', expected: 'a time not before from' })
  return { from, to }
}

export function statementFormat(raw: string | undefined): StatementFormat {
  if (raw === undefined || raw === '' || raw === 'jsonl') return 'jsonl'
  if (raw === 'csv') return 'csv'
  throw new ApiError('BAD_REQUEST', { field: 'format', expected: 'one of: jsonl | csv' })
}

interface Row extends Record<string, unknown> {
  id: string
  at_ms: string | number
  kind: string
  amount: string | number
  balance_after: string | number
  call_id: string | null
  agent_id: string | null
  target: string | null
  model: string | null
  tokens_in: number | null
  tokens_cached: number | null
  tokens_out: number | null
  tokens_cache_write: number | null
  tokens_cache_write_1h: number | null
  sm: string | number
  sq: string | number
}

/** Σ amounts of the account's flushed entries before `from`: the balance the statement opens with. */
export async function openingBalance(db: Database, accountId: string, from: Date): Promise<number> {
  const r = rowsOf<{ s: string | number | null }>(
    await db.execute(sql`select coalesce(sum(amount), 0)::bigint as s from ledger_entries where account_id = ${accountId} and at < ${from.toISOString()}::timestamptz`),
  )
  return Number(r[0]?.s ?? 0)
}

/** The entries of the range in write order, one keyset page at a time. */
export async function* statementEntries(db: Database, accountId: string, range: StatementRange, page = STATEMENT_PAGE): AsyncGenerator<StatementEntry> {
  // Write order is the stream's: an account's entries all go through its shard's one outbox stream,
  // whose ids are the order Redis applied them in. The writers' clocks (`at`) only approximate it:
  // two instances a few ms apart would put a running balance_after out of order (index
  // ledger_entries_account_stream). `at` still picks the range. A batch's flat debits share one
  // stream entry (`packed_debits`, src/write-behind/outbox.ts), as do a settle batch's filed calls'
  // debits (`packed_charged_calls`), so one id: one account's of them were made in order, each
  // posting a balance no higher than the one before, so balance_after DESC orders them (price-0
  // debits tie on it: their balances are equal, so any order runs). The keyset, negated.
  let after: { sm: string; sq: string; nb: string; id: string } | null = null
  for (;;) {
    const keyset: SQL = after
      ? sql`and (split_part(stream_id, '-', 1)::bigint, split_part(stream_id, '-', 2)::bigint, -balance_after, id) > (${after.sm}::bigint, ${after.sq}::bigint, ${after.nb}::bigint, ${after.id})`
      : sql``
    const rows: Row[] = rowsOf<Row>(
      await db.execute(sql`
        select id, (extract(epoch from at) * 1000)::bigint as at_ms, kind, amount, balance_after, call_id, agent_id, target,
               model, tokens_in, tokens_cached, tokens_out, tokens_cache_write, tokens_cache_write_1h,
               split_part(stream_id, '-', 1)::bigint as sm, split_part(stream_id, '-', 2)::bigint as sq
        from ledger_entries
        where account_id = ${accountId} and at >= ${range.from.toISOString()}::timestamptz and at < ${range.to.toISOString()}::timestamptz ${keyset}
        order by split_part(stream_id, '-', 1)::bigint, split_part(stream_id, '-', 2)::bigint, balance_after desc, id
        limit ${page}`),
    )
    for (const r of rows) yield entryOf(r)
    if (rows.length < page) return
    const last: Row = rows[rows.length - 1]!
    after = { sm: String(last.sm), sq: String(last.sq), nb: String(-Number(last.balance_after)), id: last.id }
  }
}

function entryOf(r: Row): StatementEntry {
  return {
    id: r.id,
    at: new Date(Number(r.at_ms)).toISOString(),
    kind: r.kind,
    amount: Number(r.amount),
    balance_after: Number(r.balance_after),
    call_id: r.call_id,
    agent_id: r.agent_id,
    route_or_slug: r.target,
    model: r.model ?? null,
    tokens:
      r.tokens_in === null || r.tokens_in === undefined
        ? null
        : withCacheWrites(
            { input: Number(r.tokens_in), cached: Number(r.tokens_cached ?? 0), output: Number(r.tokens_out ?? 0) },
            Number(r.tokens_cache_write ?? 0),
            Number(r.tokens_cache_write_1h ?? 0),
          ),
  }
}

export const CSV_COLUMNS = ['type', 'id', 'at', 'kind', 'amount', 'balance_after', 'call_id', 'agent_id', 'route_or_slug', 'model', 'tokens'] as const

/** RFC 4180 field: quoted when it holds a comma, a quote or a line break. */
function csvField(v: unknown): string {
  if (v === null || v === undefined) return ''
  const s = typeof v === 'object' ? JSON.stringify(v) : String(v)
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s
}

const csvRow = (values: unknown[]) => values.map(csvField).join(',') + '\r\n'

/**
 * The statement as text lines. jsonl: `{"type":"opening",…}`, one `{"type":"entry",…}` per entry,
 * `{"type":"closing",…}`. csv: a header row, then the same records in the `type` column; the
 * opening and closing rows carry their balance in `balance_after` and leave `amount` empty, so
 * opening.balance_after + Σ entry amounts = closing.balance_after.
 */
export async function* statementLines(db: Database, accountId: string, range: StatementRange, format: StatementFormat): AsyncGenerator<string> {
  const opening = await openingBalance(db, accountId, range.from)
  const frame = { account_id: accountId, from: range.from.toISOString(), to: range.to.toISOString() }
  let sum = 0
  let count = 0
  if (format === 'csv') {
    yield csvRow([...CSV_COLUMNS])
    yield csvRow(['opening', '', frame.from, '', '', opening, '', '', '', '', ''])
  } else yield JSON.stringify({ type: 'opening', ...frame, balance: opening }) + '\n'
  for await (const e of statementEntries(db, accountId, range)) {
    sum += e.amount
    count++
    yield format === 'csv'
      ? csvRow(['entry', e.id, e.at, e.kind, e.amount, e.balance_after, e.call_id, e.agent_id, e.route_or_slug, e.model, e.tokens])
      : JSON.stringify({ type: 'entry', ...e }) + '\n'
  }
  const closing = opening + sum
  if (format === 'csv') yield csvRow(['closing', '', frame.to, '', '', closing, '', '', '', '', ''])
  else yield JSON.stringify({ type: 'closing', ...frame, balance: closing, entries: count, sum }) + '\n'
}

/**
 * A streamed HTTP body of the statement; lines are batched so a page is one write, not 500. Its
 * first line (the opening balance's query) is read before the body is handed back: a Postgres that
 * fails is then an error status, not a 200 whose body breaks off after its headers.
 */
export async function statementStream(db: Database, accountId: string, range: StatementRange, format: StatementFormat): Promise<ReadableStream<Uint8Array>> {
  const lines = statementLines(db, accountId, range, format)
  const first = await lines.next()
  const enc = new TextEncoder()
  let opened = first.done ? '' : first.value
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk = opened
      opened = ''
      for (let i = 0; i < 200; i++) {
        const next = await lines.next()
        if (next.done) {
          if (chunk) controller.enqueue(enc.encode(chunk))
          controller.close()
          return
        }
        chunk += next.value
      }
      controller.enqueue(enc.encode(chunk))
    },
    async cancel() {
      await lines.return(undefined)
    },
  })
}

export function statementHeaders(accountId: string, range: StatementRange, format: StatementFormat, lagEntries: number): Record<string, string> {
  const day = (d: Date) => d.toISOString().slice(0, 10)
  return {
    'content-type': format === 'csv' ? 'text/csv; charset=utf-8; header=present' : 'application/x-ndjson; charset=utf-8',
    'content-disposition': `attachment; filename="ledger-${accountId}-${day(range.from)}-${day(range.to)}.${format}"`,
    'cache-control': 'no-store',
    // Entries still in Redis' outbox, not yet in the Postgres copy this statement reads.
    'x-pab-ledger-lag': String(lagEntries),
  }
}

/**
 * Entries of the account's shard still waiting in the outbox (other accounts of the shard
 * included): 0 means the statement holds everything written up to the moment it was asked for.
 */
export async function statementLag(ctx: Pick<RedisContext, 'redis' | 'keys'>, accountId: string): Promise<number> {
  return ctx.redis.xlen(ctx.keys.outbox(ctx.keys.shardOf(accountId)))
}
