/**
 * GET /v1/ledger refuses a range it cannot honour with BAD_REQUEST naming the field, before a byte
 * of the statement is sent: a calendar date that does not exist (it used to roll over into the
 * next month, so `to=2025-02-31` silently covered 1–2 March), and an instant outside the years
 * Postgres reads (it used to answer 200 and then break the body off when the query failed).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'
import postgres from 'postgres'

let t: TestApp
let owner: { token: string; account_id: string }

beforeAll(async () => {
  t = await startTestApp()
  t.clock.set(Date.parse('2025-03-01T10:00:00Z'))
  owner = await t.signup()
  await t.req('POST', '/v1/call/test.echo', { token: owner.token, body: { q: 'x' } })
  await flushAll(t)
})
afterAll(async () => {
  await t?.close()
})

describe('GET /v1/ledger: a range it cannot honour', () => {
  for (const [q, field] of [
    ['to=2025-02-31', 'to'],
    ['from=2025-02-29', 'from'],
    ['from=2025-04-31T00:00:00Z&to=2025-06-01', 'from'],
  ] as const) {
    test(`${q}: a date that does not exist → BAD_REQUEST naming ${field}, not another month's entries`, async () => {
      const r = await t.req('GET', `/v1/ledger?${q}`, { token: owner.token })
      expect(r.status).toBe(400)
      expect(r.body).toMatchObject({ error: 'BAD_REQUEST', field })
    })
  }

  // Each used to answer 500 INTERNAL: the calendar check threw on a month or a day no Date holds.
  const badDays = ['2026-13-01', '2026-00-10', '2026-01-32', '2026-01-00', '2026-02-30', '2026-04-31', '2025-02-29', '2026-13-01T00:00:00Z', '2026-01-00T10:00:00+08:00']
  const notDates = ['yesterday', '2026-1-1', '2026/01/01', '20260101', '2026-01-01T10:00', '2026-01-01T25:00Z', '2026-01-01T23:60Z', '2026-01-01T23:59:60Z', '2026-01-01T10:00+25:00', ' 2026-01-01', '2026-01-01\n', '１２３４-01-01']
  for (const field of ['from', 'to'] as const) {
    test(`${field}: every day the calendar lacks and every non-date → 400 BAD_REQUEST naming ${field} with what is expected`, async () => {
      for (const raw of [...badDays, ...notDates]) {
        const r = await t.req('GET', `/v1/ledger?${field}=${encodeURIComponent(raw)}`, { token: owner.token })
        expect(r.status, raw).toBe(400)
        expect(r.body, raw).toMatchObject({ error: 'BAD_REQUEST', field })
        expect(typeof r.body.expected, raw).toBe('string')
      }
    })
  }

  for (const [q, field] of [
    ['from=0000-01-01', 'from'],
    ['to=9999-12-31T23:59:59.999-14:00', 'to'],
  ] as const) {
    test(`${q}: outside the years a statement covers → BAD_REQUEST naming ${field}, not a broken 200`, async () => {
      const r = await t.req('GET', `/v1/ledger?${q}`, { token: owner.token })
      expect(r.status).toBe(400)
      expect(r.body).toMatchObject({ error: 'BAD_REQUEST', field })
    })
  }

  test('the real dates around them still work: a leap day, the first and last instants, 24:00', async () => {
    for (const q of ['from=2024-02-29', 'from=0001-01-01&to=9999-12-31T23:59:59.999Z', 'to=2025-03-01T24:00Z', 'from=2025-02-28&to=2025-03-31']) {
      const r = await t.req('GET', `/v1/ledger?${q}`, { token: owner.token })
      expect(r.status).toBe(200)
      const lines = r.text.trim().split('\n').map((l) => JSON.parse(l))
      expect(lines[0].type).toBe('opening')
      expect(lines.at(-1).type).toBe('closing')
    }
  })

  test('a Postgres that fails before the statement opens → an error status, not a 200 that breaks off', async () => {
    const sql = postgres(t.db.url, { max: 1, onnotice: () => {} })
    await sql`ALTER TABLE ledger_entries RENAME TO ledger_entries_away`
    let status: number
    let body: unknown
    try {
      const r = await t.req('GET', '/v1/ledger', { token: owner.token })
      status = r.status
      body = r.body
    } finally {
      await sql`ALTER TABLE ledger_entries_away RENAME TO ledger_entries`
      await sql.end()
    }
    expect(status).toBeGreaterThanOrEqual(500)
    expect(body).toMatchObject({ error: expect.any(String) })
    expect((await t.req('GET', '/v1/ledger', { token: owner.token })).status).toBe(200)
  })
})
