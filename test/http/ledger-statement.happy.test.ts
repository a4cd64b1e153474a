/**
 * GET /v1/ledger: random activity (paid calls, refunded failures, top-ups through the mandate, a
 * referral bonus) spread over several days by the test clock, then the statement is read back and
 * compared with the Postgres ledger one for one; for any range (fast-check) opening + Σ = closing,
 * and the CSV form says the same through an RFC 4180 parser. Another account's entries never appear.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { asc, eq } from 'drizzle-orm'
import { ledgerEntries } from '../../src/db/schema'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'
import { consentSandbox } from '../helpers/money'

let t: TestApp
const DAY = 86_400_000
const start = Date.parse('2025-03-01T02:00:00Z')
let owner: { token: string; account_id: string; public_ref: string }
let other: { token: string; account_id: string }

/** RFC 4180: quoted fields may hold commas, quotes ("") and line breaks; records end in CRLF. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = []
  let row: string[] = []
  let field = ''
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (field += '"'), i++
      else if (c === '"') quoted = false
      else field += c
    } else if (c === '"') quoted = true
    else if (c === ',') row.push(field), (field = '')
    else if (c === '\r' && text[i + 1] === '\n') {
      row.push(field), rows.push(row), (row = []), (field = ''), i++
    } else field += c
  }
  if (field !== '' || row.length) row.push(field), rows.push(row)
  return rows
}

const jsonl = (text: string) => text.trim().split('\n').map((l) => JSON.parse(l) as Record<string, any>)

async function statement(token: string, q: Record<string, string>) {
  return t.req('GET', `/v1/ledger?${new URLSearchParams(q)}`, { token })
}

beforeAll(async () => {
  t = await startTestApp()
  t.clock.set(start)
  owner = await t.signup()
  other = await t.signup()
  await consentSandbox(t, owner.token, { threshold: 0, refill: 700, ceiling: 100_000 })
  const referred = await t.signup(undefined, { referred_by: owner.public_ref })
  // Random activity over 12 days; the seed is fixed so a failure replays.
  const actions = fc.sample(fc.constantFrom('echo', 'cheap', 'fail', 'topup', 'idle', 'other'), { numRuns: 60, seed: 18 })
  let referredCalled = false
  for (const [i, a] of actions.entries()) {
    if (i % 5 === 0) t.clock.advance(DAY)
    t.clock.advance(60_000)
    if (a === 'echo' || a === 'cheap' || a === 'fail') await t.req('POST', `/v1/call/test.${a}`, { token: owner.token, body: { q: 'x' } })
    else if (a === 'topup') await t.req('POST', '/v1/topup', { token: owner.token, body: {} })
    else if (a === 'other') await t.req('POST', '/v1/call/test.echo', { token: other.token, body: { q: 'x' } })
    if (!referredCalled && i === 20) {
      referredCalled = true
      expect((await t.req('POST', '/v1/call/test.echo', { token: referred.token, body: { q: 'r' } })).status).toBe(200)
    }
  }
  await flushAll(t)
}, 120_000)
afterAll(async () => {
  await t?.close()
})

describe('GET /v1/ledger', () => {
  test("the whole statement equals the account's Postgres ledger, one for one, in write order", async () => {
    const r = await statement(owner.token, {})
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toContain('application/x-ndjson')
    expect(r.headers.get('x-pab-ledger-lag')).toBe('0')
    const lines = jsonl(r.text)
    const [opening, closing] = [lines[0]!, lines[lines.length - 1]!]
    const entries = lines.slice(1, -1)
    expect(opening).toMatchObject({ type: 'opening', balance: 0, account_id: owner.account_id })
    const pg = await t.s.db.db.select().from(ledgerEntries).where(eq(ledgerEntries.accountId, owner.account_id)).orderBy(asc(ledgerEntries.at))
    expect(entries.map((e) => e.id).sort()).toEqual(pg.map((p) => p.id).sort())
    const byId = new Map(pg.map((p) => [p.id, p]))
    for (const e of entries) {
      const p = byId.get(e.id)!
      expect(e).toEqual({
        type: 'entry',
        id: p.id,
        at: p.at.toISOString(),
        kind: p.kind,
        amount: p.amount,
        balance_after: p.balanceAfter,
        call_id: p.callId,
        agent_id: p.agentId,
        route_or_slug: p.target,
        model: null,
        tokens: null,
      })
    }
    // Write order: each entry's balance_after is the one before plus its amount.
    let running = 0
    for (const e of entries) expect(e.balance_after).toBe((running += e.amount))
    const kinds = new Set(entries.map((e) => e.kind))
    for (const k of ['grant', 'debit', 'refund', 'topup', 'referral']) expect(kinds).toContain(k)
    const balance = Number(await t.redis.hget(t.s.ctx.keys.account(owner.account_id), 'balance'))
    expect(closing).toMatchObject({ type: 'closing', balance, entries: entries.length })
  })

  test('opening + Σ amounts = closing for any range, and the ranges tile (fast-check)', async () => {
    const end = t.clock.now() + DAY
    const instant = fc.integer({ min: start - DAY, max: end })
    await fc.assert(
      fc.asyncProperty(instant, instant, instant, async (x, y, z) => {
        const [a, b, c] = [x, y, z].sort((p, q) => p - q) as [number, number, number]
        const iso = (ms: number) => new Date(ms).toISOString()
        const left = jsonl((await statement(owner.token, { from: iso(a), to: iso(b) })).text)
        const right = jsonl((await statement(owner.token, { from: iso(b), to: iso(c) })).text)
        const whole = jsonl((await statement(owner.token, { from: iso(a), to: iso(c) })).text)
        for (const s of [left, right, whole]) {
          const sum = s.slice(1, -1).reduce((acc, e) => acc + e.amount, 0)
          expect(s[0]!.balance + sum).toBe(s[s.length - 1]!.balance)
          for (const e of s.slice(1, -1)) expect(Date.parse(e.at) >= Date.parse(s[0]!.from) && Date.parse(e.at) < Date.parse(s[0]!.to)).toBe(true)
        }
        expect(left[left.length - 1]!.balance).toBe(right[0]!.balance)
        expect([...left.slice(1, -1), ...right.slice(1, -1)].map((e) => e.id)).toEqual(whole.slice(1, -1).map((e) => e.id))
      }),
      { numRuns: 25 },
    )
  }, 60_000)

  test('CSV: a standard parser reads the same records; opening balance_after + Σ amount = closing balance_after', async () => {
    const from = new Date(start + 3 * DAY).toISOString().slice(0, 10)
    const [csv, json] = await Promise.all([statement(owner.token, { from, format: 'csv' }), statement(owner.token, { from })])
    expect(csv.status).toBe(200)
    expect(csv.headers.get('content-type')).toContain('text/csv')
    expect(csv.headers.get('content-disposition')).toContain('.csv')
    const rows = parseCsv(csv.text)
    expect(rows[0]).toEqual(['type', 'id', 'at', 'kind', 'amount', 'balance_after', 'call_id', 'agent_id', 'route_or_slug', 'model', 'tokens'])
    for (const r of rows) expect(r.length).toBe(11)
    const records = rows.slice(1).map((r) => Object.fromEntries(rows[0]!.map((k, i) => [k, r[i]!])))
    const lines = jsonl(json.text)
    expect(records.map((r) => r.type)).toEqual(lines.map((l) => l.type))
    expect(records.slice(1, -1).map((r) => [r.id, r.at, r.kind, Number(r.amount), Number(r.balance_after), r.call_id || null, r.agent_id || null, r.route_or_slug || null])).toEqual(
      lines.slice(1, -1).map((l) => [l.id, l.at, l.kind, l.amount, l.balance_after, l.call_id, l.agent_id, l.route_or_slug]),
    )
    const sum = records.slice(1, -1).reduce((a, r) => a + Number(r.amount), 0)
    expect(Number(records[0]!.balance_after) + sum).toBe(Number(records[records.length - 1]!.balance_after))
    expect(records[0]!.amount).toBe('')
  })

  test("another account's entries never appear, and its own statement holds only its own", async () => {
    const mine = jsonl((await statement(owner.token, {})).text)
    const theirs = jsonl((await statement(other.token, {})).text)
    const theirPg = await t.s.db.db.select({ id: ledgerEntries.id }).from(ledgerEntries).where(eq(ledgerEntries.accountId, other.account_id))
    expect(theirPg.length).toBeGreaterThan(1)
    const mineIds = new Set(mine.map((e) => e.id))
    for (const p of theirPg) expect(mineIds.has(p.id)).toBe(false)
    expect(theirs.slice(1, -1).map((e) => e.id).sort()).toEqual(theirPg.map((p) => p.id).sort())
    expect(theirs.every((e) => e.type !== 'opening' || e.account_id === other.account_id)).toBe(true)
  })

  test('a year of entries streams in pages: the statement of a range past the page size is complete', async () => {
    const { statementEntries } = await import('../../src/ledger/statement')
    const all: string[] = []
    for await (const e of statementEntries(t.s.db.db, owner.account_id, { from: new Date(0), to: new Date(t.clock.now() + DAY) }, 3)) all.push(e.id)
    const pg = await t.s.db.db.select({ id: ledgerEntries.id }).from(ledgerEntries).where(eq(ledgerEntries.accountId, owner.account_id))
    expect(all.length).toBe(pg.length)
    expect(new Set(all).size).toBe(all.length)
  })

  test('entries still in the outbox are not in the statement yet; x-pab-ledger-lag says how many wait', async () => {
    await t.req('POST', '/v1/call/test.echo', { token: owner.token, body: { q: 'late' } })
    const r = await statement(owner.token, {})
    expect(Number(r.headers.get('x-pab-ledger-lag'))).toBeGreaterThan(0)
    await flushAll(t)
    const after = await statement(owner.token, {})
    expect(after.headers.get('x-pab-ledger-lag')).toBe('0')
    expect(jsonl(after.text).length).toBe(jsonl(r.text).length + 1)
  })

  test("in the order Redis applied them, not the writers' clocks: a second instance a few ms behind", async () => {
    const a = await t.signup()
    // Each call is written at an instant a few ms before the last one's, as by instances whose
    // clocks disagree: `at` runs backwards while the balance moves forwards.
    const base = t.clock.now() + 60_000
    for (let i = 0; i < 6; i++) {
      t.clock.set(base - i * 3)
      expect((await t.req('POST', `/v1/call/test.${i % 2 ? 'cheap' : 'echo'}`, { token: a.token, body: { q: `skew ${i}` } })).status).toBe(200)
    }
    t.clock.set(base + 60_000)
    await flushAll(t)
    const entries = jsonl((await statement(a.token, {})).text).slice(1, -1)
    expect(entries.filter((e) => e.kind === 'debit')).toHaveLength(6)
    let running = 0
    for (const e of entries) expect(e.balance_after).toBe((running += e.amount))
    // Paged too: the keyset walks the same order.
    const { statementEntries } = await import('../../src/ledger/statement')
    const paged: string[] = []
    for await (const e of statementEntries(t.s.db.db, a.account_id, { from: new Date(0), to: new Date(base + DAY) }, 2)) paged.push(e.id)
    expect(paged).toEqual(entries.map((e) => e.id))
  })
})
