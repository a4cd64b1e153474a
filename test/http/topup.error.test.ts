/**
 * Every refusal of POST /v1/topup (sandbox): no mandate, one per day, the monthly ceiling, the
 * balance cap, a malformed amount — all before any charge.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { redisBalance } from '../helpers/ledger'
import { consentSandbox } from '../helpers/money'
import { awayFromHktMonthEnd } from '../helpers/clock-place'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { DEFAULT_BALANCE_CAP: '10000' } })
})
afterAll(async () => {
  await t.close()
})

describe('POST /v1/topup refusals', () => {
  test('without a mandate: 402 PAYMENT_REQUIRED, reason no_mandate, with the consent page', async () => {
    const a = await t.signup()
    const r = await t.req('POST', '/v1/topup', { token: a.token })
    expect(r.status).toBe(402)
    expect(r.body).toMatchObject({ error: 'PAYMENT_REQUIRED', reason: 'no_mandate', balance: 500, price: 5000 })
    expect(r.body.enable_url).toMatch(/^http:\/\/pab\.test\/mandate\?ref=mr_/)
    expect(r.body.human_readable).toContain(r.body.enable_url)
    expect(r.body.topup_url).toBe('http://pab.test/v1/topup')
    expect(r.body.human_readable).toMatch(/\/topup\?ref=mr_/)
  })

  test('a disabled or deleted mandate is no mandate', async () => {
    const a = await t.signup()
    await consentSandbox(t, a.token, { threshold: 100, refill: 1000, ceiling: 5000 })
    await t.req('PUT', '/v1/mandate', { token: a.token, body: { enabled: false } })
    expect((await t.req('POST', '/v1/topup', { token: a.token })).body.reason).toBe('no_mandate')
    await t.req('DELETE', '/v1/mandate', { token: a.token })
    expect((await t.req('POST', '/v1/topup', { token: a.token })).status).toBe(402)
  })

  test('past the monthly ceiling: CONFLICT naming the ceiling; nothing charged', async () => {
    // A day later is still this HKT month (from a start on its last day, the ceiling had freed up).
    awayFromHktMonthEnd(t.clock)
    const a = await t.signup()
    await consentSandbox(t, a.token, { threshold: 100, refill: 1000, ceiling: 1500 })
    expect((await t.req('POST', '/v1/topup', { token: a.token })).status).toBe(200)
    t.clock.advance(24 * 3600 * 1000)
    const r = await t.req('POST', '/v1/topup', { token: a.token })
    expect(r.status).toBe(409)
    expect(r.body).toMatchObject({ error: 'CONFLICT', refilled_this_period: 1000, ceiling: 1500 })
    // When the ceiling frees up: the first 00:00 HKT of the next HKT month.
    const hk = new Date(t.clock.now() + 8 * 3600_000)
    expect(r.body.resets_at).toBe(new Date(Date.UTC(hk.getUTCFullYear(), hk.getUTCMonth() + 1, 1) - 8 * 3600_000).toISOString())
    expect(await redisBalance(t, a.account_id)).toBe(1500)
  })

  test('past the balance cap: BALANCE_CAP (parked: false); nothing charged', async () => {
    const a = await t.signup()
    await consentSandbox(t, a.token, { threshold: 100, refill: 9600, ceiling: 50000 })
    const r = await t.req('POST', '/v1/topup', { token: a.token })
    expect(r.status).toBe(409)
    expect(r.body).toMatchObject({ error: 'BALANCE_CAP', balance_cap: 10000, balance: 500, parked: false })
    expect(await redisBalance(t, a.account_id)).toBe(500)
    // The refusal used no top-up of the day: a smaller one still works.
    const ok = await t.req('POST', '/v1/topup', { token: a.token, body: { amount: 9500 } })
    expect(ok.status).toBe(200)
    expect(ok.body.balance).toBe(10000)
  })

  test('malformed amounts: BAD_REQUEST naming the field', async () => {
    const a = await t.signup()
    await consentSandbox(t, a.token, { threshold: 100, refill: 1000, ceiling: 5000 })
    for (const body of [{ amount: 0 }, { amount: -5 }, { amount: 1.5 }, { amount: '100' }, { amount: 1005 }, { amount: 100 }, { other: 1 }]) {
      const r = await t.req('POST', '/v1/topup', { token: a.token, body })
      expect(r.status, JSON.stringify(body)).toBe(400)
      expect(r.body.error).toBe('BAD_REQUEST')
      expect(r.body.field, JSON.stringify(body)).toBeDefined()
    }
    expect(await redisBalance(t, a.account_id)).toBe(500)
  })

  test('no bearer: UNAUTHORIZED', async () => {
    const r = await t.req('POST', '/v1/topup')
    expect(r.status).toBe(401)
  })
})
