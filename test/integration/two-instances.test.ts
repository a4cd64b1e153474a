/**
 * Two API instances of one deployment (same Redis key prefix, same Postgres database, one clock)
 * in front of one Redis: a limit, an idempotency key or a balance is one shared fact, whichever
 * instance a request lands on. (Caps and kills across instances: test/http governance tests.)
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../../src/clock'
import { startTestApp, type TestApp } from '../helpers/harness'
import { assertLedger } from '../helpers/invariants'
import { cleanupAll } from '../helpers/cleanup'

const LIMIT = 600
let a: TestApp
let b: TestApp
const clock = new ManualClock(Math.ceil(Date.now() / 60_000) * 60_000 + 1_000)
beforeAll(async () => {
  const env = { RATE_LIMIT_PER_TOKEN: String(LIMIT), RATE_LIMIT_PER_IP: String(LIMIT), TRUSTED_PROXIES: '127.0.0.1', SIGNUP_ALARM_PER_HOUR: '100000' }
  a = await startTestApp({ env, clock })
  b = await startTestApp({ env, clock, database: a.db, prefix: a.prefix })
})
afterAll(() =>
  cleanupAll(
    () => b?.close(),
    () => a?.close(),
  ),
)

/** Request i goes to instance a or b in turn. */
const either = (i: number) => (i % 2 === 0 ? a : b)

describe('two instances behind one Redis', () => {
  test('the per-token rate limit is one budget across both instances', async () => {
    const acct = await a.signup()
    const rs = await Promise.all(Array.from({ length: LIMIT }, (_, i) => either(i).req('GET', '/v1/balance', { token: acct.token })))
    expect(rs.every((r) => r.status === 200)).toBe(true)
    for (const t of [a, b]) {
      const r = await t.req('GET', '/v1/balance', { token: acct.token })
      expect(r.status).toBe(429)
      expect(r.body.error).toBe('RATE_LIMITED')
    }
    clock.advance(120_000)
    expect((await b.req('GET', '/v1/balance', { token: acct.token })).status).toBe(200)
  })

  test('the per-IP limit of unauthenticated requests is one budget across both instances', async () => {
    const ip = { 'x-forwarded-for': '198.51.100.23' }
    const rs = await Promise.all(Array.from({ length: LIMIT }, (_, i) => either(i).req('GET', '/v1/search?q=echo', { headers: ip })))
    expect(rs.every((r) => r.status === 200)).toBe(true)
    expect((await a.req('GET', '/v1/search?q=echo', { headers: ip })).status).toBe(429)
    expect((await b.req('GET', '/v1/search?q=echo', { headers: ip })).status).toBe(429)
  })

  test('an Idempotency-Key used on one instance replays on the other, charged once', async () => {
    const acct = await a.signup()
    const call = (t: TestApp) => t.req('POST', '/v1/call/test.echo', { token: acct.token, body: { q: 'idem' }, headers: { 'idempotency-key': 'two-inst' } })
    const first = await call(a)
    const second = await call(b)
    expect(first.status).toBe(200)
    expect(second.body).toEqual(first.body)
    // Racing on both instances at once with a fresh key: still one charge.
    const race = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        either(i).req('POST', '/v1/call/test.echo', { token: acct.token, body: { q: 'race' }, headers: { 'idempotency-key': 'two-inst-race' } }),
      ),
    )
    const ok = race.filter((r) => r.status === 200)
    expect(ok.length + race.filter((r) => r.status === 409).length).toBe(20)
    expect(new Set(ok.map((r) => r.body.call_id)).size).toBe(1)
    await assertLedger(a.s, [{ account: acct.account_id, balance: 490, debits: [first.body.call_id, ok[0]!.body.call_id] }])
  })

  test('one e-mail signed up on both instances at once: one account', async () => {
    const email = `both-${a.prefix}@example.com`
    const rs = await Promise.all([a, b, a, b].map((t) => t.req('POST', '/v1/signup', { body: { email } })))
    expect(rs.filter((r) => r.status === 201)).toHaveLength(1)
    expect(rs.filter((r) => r.status === 409).every((r) => r.body.error === 'EMAIL_EXISTS')).toBe(true)
  })

  test('500 concurrent calls (a fifth failing upstream) split over both instances, both flushers running: exact to the credit', async () => {
    const acct = await a.signup()
    a.s.flusher.start()
    b.s.flusher.start()
    const rs = await Promise.all(
      Array.from({ length: 500 }, (_, i) => either(i).req('POST', `/v1/call/${i % 5 === 0 ? 'test.fail' : 'test.echo'}`, { token: acct.token, body: { q: 'split' } })),
    )
    await Promise.all([a.s.flusher.stop(), b.s.flusher.stop()])
    const ok = rs.filter((r) => r.status === 200)
    const refunded = rs.filter((r) => r.status === 502)
    // How many succeed depends on how soon the refunds land; the ledger must agree either way.
    expect(ok.length).toBeGreaterThan(0)
    expect(refunded.length).toBeGreaterThan(0)
    // (Balances after a debit need not be distinct here: a refund in between gives credits back.)
    expect(ok.every((r) => r.body.balance >= 0)).toBe(true)
    expect(rs.filter((r) => r.status === 402).length + ok.length + refunded.length).toBe(500)
    await assertLedger(a.s, [{ account: acct.account_id, balance: 500 - 5 * ok.length, debits: ok.map((r) => r.body.call_id), refunded: refunded.map((r) => r.body.call_id) }])
  })
})
