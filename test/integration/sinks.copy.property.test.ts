/**
 * The hot sinks (src/ledger/sinks.ts) write a round of first deliveries by COPY and everything else
 * (a redelivery, the flusher's slow path, PGlite) by an INSERT with ON CONFLICT.
 * Property: for random money entries and call records, their text full of COPY's own special
 * characters, both ways leave the same rows in Postgres.
 * And a COPY Postgres refuses rejects (it never hangs), rolls its transaction back, and leaves every
 * pooled connection serving.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import fc from 'fast-check'
import { openDatabase, type Database, type DbHandle } from '../../src/db/client'
import { rowsOf } from '../../src/db/rows'
import { LEDGER_SINKS } from '../../src/ledger/sinks'
import { MONEY_KINDS, type OutboxEntry } from '../../src/write-behind/outbox'
import { classifyFlushError, describeFlushError } from '../../src/write-behind/poison'
import { createTestDatabase } from '../helpers/harness'

let pg: Awaited<ReturnType<typeof createTestDatabase>>
let h: DbHandle
beforeAll(async () => {
  pg = await createTestDatabase()
  h = await openDatabase({ DATABASE_URL: pg.url, PGLITE_DIR: '' })
})
afterAll(async () => {
  await h.close()
  await pg.drop()
})

/** Text with what COPY's text format gives a meaning (tab, newlines, backslash, `\N`, `\.`) and more; never U+0000. */
const piece = fc.oneof(fc.constantFrom('\t', '\n', '\r', '\\', '\\N', '\\.', '\\t', 'N', '"', "'", ',', '{', '}', ' ', 'é', '😀', '\u007f', '\u2028'), fc.string({ maxLength: 6 }).map((s) => s.replace(/\u0000/g, '')))
const text = fc.array(piece, { maxLength: 6 }).map((p) => p.join(''))
const int = fc.integer({ min: -1_000_000_000, max: 1_000_000_000 })
const count = fc.integer({ min: 0, max: 2_000_000 })
const ms = fc.integer({ min: 0, max: 4_102_444_800_000 })

const money = fc.record({
  kind: fc.constantFrom(...MONEY_KINDS),
  acct: text,
  agent: fc.option(text, { nil: undefined }),
  amount: int,
  bal: int,
  ref: fc.option(text, { nil: undefined }),
  target: fc.option(text, { nil: undefined }),
  uncredited: fc.option(fc.tuple(count, text), { nil: undefined }),
  reason: fc.option(text, { nil: undefined }),
  at: ms,
  model: fc.option(text, { nil: undefined }),
  tokens: fc.option(fc.tuple(count, count, count, fc.option(count, { nil: undefined }), fc.option(count, { nil: undefined })), { nil: undefined }),
  rem: fc.option(count, { nil: undefined }),
  origId: fc.option(fc.constant('1700000000000-7'), { nil: undefined }),
})

const record = fc.record({
  account_id: text,
  agent_id: fc.option(text, { nil: null }),
  slug: text,
  charged: count,
  refunded: fc.boolean(),
  outcome: text,
  http_status: fc.option(fc.integer({ min: 100, max: 599 }), { nil: null }),
  latency_ms: count,
  at: ms.map((m) => new Date(m).toISOString()),
  model: fc.option(fc.option(text, { nil: null }), { nil: undefined }),
  tokens: fc.option(fc.option(fc.record({ input: count, cached: count, output: count }, { requiredKeys: ['input'] }), { nil: null }), { nil: undefined }),
  reserved: fc.option(count, { nil: undefined }),
  uncharged: fc.option(count, { nil: undefined }),
  usage_source: fc.option(fc.constantFrom('provider', 'estimated'), { nil: undefined }),
  lane: fc.option(fc.constantFrom('house', 'owner'), { nil: undefined }),
})

let seq = 0

/** A money entry with the fields its scripts XADD (outbox.ts, moneyFields). */
function moneyEntry(m: typeof money extends fc.Arbitrary<infer T> ? T : never): OutboxEntry {
  const call = `call_${++seq}_${Math.random().toString(36).slice(2, 8)}`
  const f: Record<string, string> = { kind: m.kind, id: `${call}:${m.kind}`, acct: m.acct, amount: String(m.amount), bal: String(m.bal), call, at: String(m.at) }
  if (m.agent !== undefined) f.agent = m.agent
  if (m.ref !== undefined) f.ref = m.ref
  if (m.target !== undefined) f.target = m.target
  if (m.uncredited !== undefined) [f.uncredited, f.reason] = [String(m.uncredited[0]), m.uncredited[1]]
  else if (m.reason !== undefined) f.reason = m.reason
  if (m.model !== undefined) f.model = m.model
  if (m.tokens !== undefined) {
    f.tin = String(m.tokens[0])
    f.tcached = String(m.tokens[1])
    f.tout = String(m.tokens[2])
    if (m.tokens[3] !== undefined) f.tcw = String(m.tokens[3])
    if (m.tokens[4] !== undefined) f.tcw1h = String(m.tokens[4])
  }
  if (m.rem !== undefined) f.rem = String(m.rem)
  if (m.origId !== undefined) f.orig_id = m.origId
  return { streamId: `${m.at}-${seq}`, kind: m.kind, fields: f }
}

/** A call entry as record-calls.lua writes it: the record as JSON (CallRecord plus account_id). */
function callEntry(r: typeof record extends fc.Arbitrary<infer T> ? T : never): OutboxEntry {
  const call_id = `call_${++seq}_${Math.random().toString(36).slice(2, 8)}`
  return { streamId: `1-${seq}`, kind: 'call', fields: { kind: 'call', id: `${call_id}:call`, organic: '1', charged: String(r.charged), rec: JSON.stringify({ call_id, ...r }) } }
}

class RolledBack extends Error {}

/** Writes the entries as a round would (fresh or not), reads their rows back, and rolls it all back. */
async function rowsWritten(money: OutboxEntry[], calls: OutboxEntry[], fresh: boolean): Promise<unknown> {
  let rows: unknown = null
  await h.db
    .transaction(async (tx) => {
      const db = tx as unknown as Database
      // Every money kind has the one ledger sink; a round hands it all of them together.
      if (money.length > 0) await LEDGER_SINKS[money[0]!.kind]!(db, money, { fresh })
      if (calls.length > 0) await LEDGER_SINKS.call!(db, calls, { fresh })
      const ledger = rowsOf(await db.execute(sql`select * from ledger_entries order by id`))
      const call = rowsOf(await db.execute(sql`select * from calls order by call_id`))
      rows = { ledger, call }
      throw new RolledBack()
    })
    .catch((e) => {
      if (!(e instanceof RolledBack)) throw e
    })
  return rows
}

test('a fresh round by COPY and a redelivery by INSERT write the same rows, whatever the text', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(money, { maxLength: 12 }), fc.array(record, { maxLength: 12 }), async (ms, rs) => {
      const m = ms.map(moneyEntry)
      const c = rs.map(callEntry)
      const copied = await rowsWritten(m, c, true)
      const inserted = await rowsWritten(m, c, false)
      expect(copied).toEqual(inserted)
      // Both hold every entry: nothing was dropped on either way.
      expect((copied as { ledger: unknown[] }).ledger).toHaveLength(m.length)
      expect((copied as { call: unknown[] }).call).toHaveLength(c.length)
    }),
    { numRuns: 60 },
  )
})

test('a COPY Postgres refuses rejects, rolls its transaction back and leaves the pool serving', async () => {
  const [a, b] = [moneyEntry(fc.sample(money, 1)[0]!), moneyEntry(fc.sample(money, 1)[0]!)]
  const call = callEntry(fc.sample(record, 1)[0]!)
  // More refusals than the pool has connections (10): a connection left in its aborted transaction
  // would leave the last rounds waiting for one forever.
  for (let i = 0; i < 12; i++) {
    const round = h.db.transaction(async (tx) => {
      await LEDGER_SINKS.call!(tx as unknown as Database, [call], { fresh: true })
      // The same entry twice in one round: the unique index refuses the second row.
      await LEDGER_SINKS.debit!(tx as unknown as Database, [a, b, a], { fresh: true })
    })
    // Postgres' own reason reaches the flusher (what a dead letter would say), not a stand-in.
    expect(await round.then(() => 'committed', describeFlushError)).toMatch(/^23505: duplicate key value/)
  }
  const held = rowsOf<{ n: string | number }>(await h.db.execute(sql`select count(*) as n from calls`))
  expect(Number(held[0]!.n)).toBe(0)
  // The same rows, once each, commit; nothing of the refused rounds is left in any connection.
  await h.db.transaction(async (tx) => {
    await LEDGER_SINKS.call!(tx as unknown as Database, [call], { fresh: true })
    await LEDGER_SINKS.debit!(tx as unknown as Database, [a, b], { fresh: true })
  })
  const ids = rowsOf<{ id: string }>(await h.db.execute(sql`select id from ledger_entries order by id`)).map((r) => r.id)
  expect(ids).toEqual([a.fields.id!, b.fields.id!].sort())
  const aborted = rowsOf<{ n: string | number }>(await h.db.execute(sql`select count(*) as n from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'`))
  expect(Number(aborted[0]!.n)).toBe(0)
})

test('what one way refuses the other refuses too, and the flusher reads both as poison', async () => {
  const m = fc.sample(money, 1)[0]!
  const r = fc.sample(record, 1)[0]!
  const cases: [string, () => OutboxEntry[]][] = [
    ['an amount that is no number', () => [{ ...moneyEntry(m), fields: { ...moneyEntry(m).fields, amount: 'lots' } }]],
    ['U+0000 in a text', () => [{ ...moneyEntry(m), fields: { ...moneyEntry(m).fields, target: 'a\u0000b' } }]],
    ['a record without `refunded`', () => [callEntry({ ...r, refunded: undefined as unknown as boolean })]],
    ['a record that is no JSON', () => [{ ...callEntry(r), fields: { ...callEntry(r).fields, rec: '{"call_id": ' } }]],
    ['a record that is a JSON array', () => [{ ...callEntry(r), fields: { ...callEntry(r).fields, rec: '[1]' } }]],
  ]
  for (const [name, entries] of cases) {
    const es = entries()
    const outcome = async (fresh: boolean) =>
      h.db
        .transaction(async (tx) => LEDGER_SINKS[es[0]!.kind]!(tx as unknown as Database, es, { fresh }))
        .then(() => 'written', (e) => classifyFlushError(e))
    expect([name, await outcome(true)]).toEqual([name, 'poison'])
    expect([name, await outcome(false)]).toEqual([name, 'poison'])
  }
  expect(Number(rowsOf<{ n: string | number }>(await h.db.execute(sql`select count(*) as n from calls where call_id like 'call_%'`))[0]!.n)).toBe(1)
})

test("each money row holds its own entry's instant, whether a round's entries share one or not; an `at` that is no time is poison after a good one", async () => {
  const base = fc.sample(money, 1)[0]!
  const t = 1_795_984_709_121
  // Runs of one millisecond (a turn's debits), a change, a return to an earlier one.
  const ats = [t, t, t + 1, t + 1, t, t + 86_400_000, t]
  const es = ats.map((at) => moneyEntry({ ...base, at }))
  for (const fresh of [true, false]) {
    const rows = (await rowsWritten(es, [], fresh)) as { ledger: { id: string; at: Date | string }[] }
    const byId = new Map(rows.ledger.map((r) => [r.id, new Date(r.at).getTime()]))
    expect(es.map((e) => byId.get(e.fields.id!))).toEqual(ats)
  }
  const bad = [moneyEntry({ ...base, at: t }), { ...moneyEntry(base), fields: { ...moneyEntry(base).fields, at: 'yesterday' } }]
  for (const fresh of [true, false]) {
    const outcome = await h.db
      .transaction(async (tx) => LEDGER_SINKS[bad[0]!.kind]!(tx as unknown as Database, bad, { fresh }))
      .then(() => 'written', (e) => classifyFlushError(e))
    expect(outcome).toBe('poison')
  }
})
