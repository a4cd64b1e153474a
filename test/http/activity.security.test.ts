/**
 * GET /v1/activity pages an account's calls newest first by (at, call_id), merging Redis' recent
 * calls (compared in JavaScript) with Postgres' older ones (compared by the database). The two must
 * agree on the order of call ids, or a page boundary inside one millisecond repeats some calls and
 * skips others: a Postgres whose default collation is a language's (en_US.UTF-8, the default of
 * the official image and of most managed services) sorts `call_B…` after `call_a…`, JavaScript
 * before. And a cursor is only ever one the service wrote: anything else is BAD_REQUEST, not a page
 * read with a time Postgres cannot hold (an empty 200 that says the history ended, logged as
 * Postgres being down) or read one way from Redis and another from Postgres.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'

let t: TestApp
let owner: { token: string; account_id: string }
const CALLS = 40

beforeAll(async () => {
  t = await startTestApp()
  // The manual clock stands still: every call below is filed in the same millisecond.
  t.clock.set(Date.parse('2025-03-01T10:00:00Z'))
  owner = await t.signup()
  for (let i = 0; i < CALLS; i++) expect((await t.req('POST', '/v1/call/test.cheap', { token: owner.token, body: { q: `c${i}` } })).status).toBe(200)
  await flushAll(t)
  // The database a deployment gets from a Postgres initialised with a language's locale.
  const sql = postgres(t.db.url, { max: 1, onnotice: () => {} })
  await sql`ALTER TABLE calls ALTER COLUMN call_id TYPE text COLLATE "en-US-x-icu"`
  await sql.end()
})
afterAll(async () => {
  await t?.close()
})

const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url')

async function allPages(limit: number): Promise<string[]> {
  const seen: string[] = []
  let cursor: string | null = null
  for (let i = 0; i < 100; i++) {
    const r = await t.req('GET', `/v1/activity?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`, { token: owner.token })
    expect(r.status).toBe(200)
    seen.push(...r.body.calls.map((c: { call_id: string }) => c.call_id))
    cursor = r.body.next_cursor
    if (!cursor) break
  }
  return seen
}

describe('GET /v1/activity paging', () => {
  test('calls of one millisecond, paged under a language collation: each call exactly once', async () => {
    for (const limit of [3, 7, 13]) {
      const seen = await allPages(limit)
      expect(seen.length).toBe(new Set(seen).size)
      expect(seen.length).toBe(CALLS)
    }
  })

  test('a cursor the service did not write → BAD_REQUEST naming cursor, not an empty or mixed page', async () => {
    const forged = [
      { at: '+275760-09-13T00:00:00.000Z', id: 'call_x' }, // a time Postgres cannot hold
      { at: '2025-03-01T10:00:00.000Z', id: 'call_a\u0000b' }, // a NUL Postgres text cannot carry
      { at: '9', id: 'call_x' }, // Redis reads it as text, Postgres as a date of 2001
      { at: 'Mar 1 2025', id: 'call_x' },
      { at: '2025-03-01T10:00:00.000Z', id: '' },
    ]
    for (const c of forged) {
      const r = await t.req('GET', `/v1/activity?limit=5&cursor=${b64(c)}`, { token: owner.token })
      expect([JSON.stringify(c), r.status, r.body.field]).toEqual([JSON.stringify(c), 400, 'cursor'])
    }
    // The service's own cursor still pages.
    const first = await t.req('GET', '/v1/activity?limit=5', { token: owner.token })
    expect((await t.req('GET', `/v1/activity?limit=5&cursor=${first.body.next_cursor}`, { token: owner.token })).body.calls).toHaveLength(5)
  })
})
