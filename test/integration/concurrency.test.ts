import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { checkRedisInvariant, flushAll, pgLedger, redisBalance } from '../helpers/ledger'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

describe('the debit under concurrency', () => {
  test('500 concurrent calls on a balance that covers 100 → exactly 100 succeed, the balance ends at 0', async () => {
    const a = await t.signup() // 500 credits; test.echo costs 5
    const rs = await Promise.all(Array.from({ length: 500 }, () => t.req('POST', '/v1/call/test.echo', { token: a.token, body: { q: 'c' } })))
    const ok = rs.filter((r) => r.status === 200)
    const refused = rs.filter((r) => r.status === 402)
    expect(ok).toHaveLength(100)
    expect(refused).toHaveLength(400)
    expect(refused.every((r) => r.body.error === 'PAYMENT_REQUIRED')).toBe(true)
    // No answer ever showed a negative balance, and each successful debit left a distinct balance.
    const balances = ok.map((r) => r.body.balance as number)
    expect(Math.min(...balances)).toBe(0)
    expect(new Set(balances).size).toBe(100)
    expect(await redisBalance(t, a.account_id)).toBe(0)
    const entries = await checkRedisInvariant(t, a.account_id)
    expect(entries.filter((e) => e.kind === 'debit')).toHaveLength(100)
    expect(t.fake.seen.filter((s) => s.body === '{"q":"c"}')).toHaveLength(100)

    await flushAll(t)
    expect(await pgLedger(t, a.account_id)).toEqual({ count: 101, distinct: 101, sum: 0 })
  })

  test('concurrent calls with provider failures mixed in: every failed call refunded once', async () => {
    const a = await t.signup()
    const slugs = Array.from({ length: 200 }, (_, i) => (i % 3 === 0 ? 'test.fail' : 'test.cheap'))
    const rs = await Promise.all(slugs.map((slug) => t.req('POST', `/v1/call/${slug}`, { token: a.token, body: {} })))
    const ok = rs.filter((r) => r.status === 200).length
    const failed = rs.filter((r) => r.status === 502).length
    expect(ok + failed).toBe(200)
    expect(await redisBalance(t, a.account_id)).toBe(500 - ok)
    const entries = await checkRedisInvariant(t, a.account_id)
    expect(entries.filter((e) => e.kind === 'refund')).toHaveLength(failed)
  })
})
