/**
 * The overview's 30-day chart counts a refund on the HKT day of the debit it gives back, as the
 * daily spend window does (refund.lua, settle.lua): a call debited before midnight and refunded after
 * it cost nothing on either day. It used to count the refund on its own day, so the chart showed
 * the refunded call as spend of the first day and hid as much of the next day's real spend.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'
import { chartBars as bars, ConsoleClient } from '../helpers/console'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t?.close()
})


describe('console overview: spend per HKT day', () => {
  test('a call debited at 23:59:59.9 HKT and refunded after midnight is spend of neither day', async () => {
    t.clock.set(Date.UTC(2026, 2, 9, 15, 59, 59, 900)) // 23:59:59.900 HKT, 2026-03-09
    const owner = await t.signup()
    // test.hang times out after 300 ms (a refunded timeout); midnight passes meanwhile.
    const hung = t.req('POST', '/v1/call/test.hang', { token: owner.token, body: {} })
    await Bun.sleep(50)
    t.clock.set(Date.UTC(2026, 2, 9, 16, 0, 1)) // 00:00:01 HKT, 2026-03-10
    expect((await hung).body).toMatchObject({ error: 'PROVIDER_ERROR', refunded: true })
    expect((await t.req('POST', '/v1/call/test.echo', { token: owner.token, body: {} })).status).toBe(200)
    await Bun.sleep(20)
    await flushAll(t)

    // The spend window agrees: day 1 spent nothing, day 2 the echo's 5.
    expect((await t.req('GET', '/v1/balance', { token: owner.token })).body.spent_today).toBe(5)
    const c = new ConsoleClient(t)
    await c.signIn(owner.token)
    const page = await c.get('/console')
    expect(page.status).toBe(200)
    expect(bars(page.text)).toEqual({ '2026-03-10': 5 })
  })
})
