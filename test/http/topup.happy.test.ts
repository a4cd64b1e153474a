/**
 * Money in, sandbox mode: the agent's explicit top-up through the mandate, the top-up links of
 * GET /v1/balance, and a credit pack bought on our own payment page.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll, pgLedger, redisBalance } from '../helpers/ledger'
import { consentSandbox, get, GOOD_CARD, pathOf, postForm, topupRows } from '../helpers/money'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

describe('POST /v1/topup', () => {
  test('an agent token tops up the mandate’s refill; the ledger entry names the charge', async () => {
    const a = await t.signup()
    await consentSandbox(t, a.token, { threshold: 100, refill: 2000, ceiling: 10000 })
    const agent = await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'worker' } })
    expect(agent.status).toBe(201)
    const r = await t.req('POST', '/v1/topup', { token: agent.body.token })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ credits_added: 2000, balance: 2500 })
    expect(r.body.charge_id).toMatch(/^sbx_ch_/)
    const m = await t.req('GET', '/v1/mandate', { token: a.token })
    expect(m.body.refilled_this_period).toBe(2000)
    await flushAll(t)
    const rows = await topupRows(t, a.account_id)
    expect(rows.map((x) => [x.amount, x.refId, x.target])).toEqual([[2000, r.body.charge_id, 'topup']])
    expect((await pgLedger(t, a.account_id)).sum).toBe(2500)
  })

  test('an explicit amount, no body at all, and one top-up per HKT day: the next day works again', async () => {
    const a = await t.signup()
    await consentSandbox(t, a.token, { threshold: 100, refill: 2000, ceiling: 10000 })
    const r = await t.req('POST', '/v1/topup', { token: a.token, body: { amount: 1500 } })
    expect(r.body).toMatchObject({ credits_added: 1500, balance: 2000 })
    const again = await t.req('POST', '/v1/topup', { token: a.token })
    expect(again.status).toBe(409)
    expect(again.body).toMatchObject({ error: 'CONFLICT' })
    expect(again.body.reason).toContain('one per day')
    t.clock.advance(24 * 3600 * 1000)
    const next = await t.req('POST', '/v1/topup', { token: a.token })
    expect(next.status).toBe(200)
    expect(next.body.balance).toBe(4000)
  })
})

describe('top-up links and credit packs', () => {
  test('GET /v1/balance links the agent’s top-up, our pack page, each pack, and the consent page', async () => {
    const a = await t.signup()
    const b = await t.req('GET', '/v1/balance', { token: a.token })
    expect(b.body.links.topup).toBe('http://pab.test/v1/topup')
    expect(b.body.links.buy_credits).toMatch(/^http:\/\/pab\.test\/topup\?ref=mr_/)
    expect(b.body.links.packs).toEqual([
      { credits: 5000, price_usd: '5.00', url: expect.stringMatching(/\/topup\?ref=mr_.*&pack=usd5$/) },
      { credits: 20000, price_usd: '20.00', url: expect.stringMatching(/&pack=usd20$/) },
      { credits: 50000, price_usd: '50.00', url: expect.stringMatching(/&pack=usd50$/) },
    ])
    const page = await get(t, pathOf(b.body.links.buy_credits))
    expect(page.status).toBe(200)
    expect(page.text).toContain('5000 credits')
    expect(page.text).toContain('Pay $20.00 (sandbox)')
  })

  test('paying a pack with the test card credits it; another card is declined and credits nothing', async () => {
    const a = await t.signup()
    const b = await t.req('GET', '/v1/balance', { token: a.token })
    const pack = pathOf(b.body.links.packs[0].url)
    const declined = await postForm(t, pack, { card: '4000000000000002' })
    expect(declined.status).toBe(402)
    expect(declined.text).toContain('Card declined')
    expect(await redisBalance(t, a.account_id)).toBe(500)
    const paid = await postForm(t, pack, { card: GOOD_CARD })
    expect(paid.status).toBe(200)
    expect(paid.text).toContain('5000 credits added')
    expect(await redisBalance(t, a.account_id)).toBe(5500)
    await flushAll(t)
    const rows = await topupRows(t, a.account_id)
    expect(rows.map((x) => [x.amount, x.target])).toEqual([[5000, 'pack']])
    // A pack is not a refill: the mandate's monthly ceiling is untouched.
    expect((await t.req('GET', '/v1/mandate', { token: a.token })).body.refilled_this_period).toBe(0)
  })
})
