/**
 * The auto-refill mandate in sandbox mode: consent page, GET/PUT/DELETE /v1/mandate, the
 * background refill after a debit under the threshold, and its ledger entry.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { mandates } from '../../src/db/schema'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll, pgLedger, redisBalance } from '../helpers/ledger'
import { consentPath, consentSandbox, get, GOOD_CARD, postForm, topupRows } from '../helpers/money'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

describe('mandate (sandbox)', () => {
  test('before consent: defaults, no card, the enable_url of GET /v1/balance', async () => {
    const a = await t.signup()
    const m = await t.req('GET', '/v1/mandate', { token: a.token })
    expect(m.status).toBe(200)
    expect(m.body).toMatchObject({ enabled: false, threshold: 1000, refill: 5000, ceiling: 20000, period: 'month', refilled_this_period: 0, card: null })
    const bal = await t.req('GET', '/v1/balance', { token: a.token })
    expect(m.body.enable_url).toBe(bal.body.links.enable_auto_refill)
    expect(m.body.enable_url).toMatch(/^http:\/\/pab\.test\/mandate\?ref=mr_/)
  })

  test('the consent page is a plain form showing the limits, with the card field', async () => {
    const a = await t.signup()
    const page = await get(t, await consentPath(t, a.token))
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toContain('text/html')
    expect(page.headers.get('cache-control')).toBe('no-store')
    expect(page.headers.get('referrer-policy')).toBe('no-referrer')
    expect(page.text).toContain('<form method="post"')
    expect(page.text).toContain('name="card"')
    for (const limit of ['1000 credits', '5000 credits', '20000 credits']) expect(page.text).toContain(limit)
    expect(page.text).toContain('4242 4242 4242 4242')
    expect(page.text).not.toContain('<script')
  })

  test('a declined card saves nothing and says so', async () => {
    const a = await t.signup()
    const r = await postForm(t, await consentPath(t, a.token), { card: '4000 0000 0000 0002' })
    expect(r.status).toBe(402)
    expect(r.text).toContain('Card declined')
    const m = await t.req('GET', '/v1/mandate', { token: a.token })
    expect(m.body).toMatchObject({ enabled: false, card: null })
  })

  test("the test card saves the card and turns auto-refill on with the operator's limits", async () => {
    const a = await t.signup()
    await t.req('PUT', '/v1/mandate', { token: a.token, body: { threshold: 300, refill: 2000, ceiling: 10000 } })
    const r = await postForm(t, await consentPath(t, a.token), { threshold: 300, refill: 2000, ceiling: 10000, card: '4242 4242 4242 4242' })
    expect(r.status).toBe(200)
    expect(r.text).toContain('Auto-refill is on')
    expect(r.text).toContain('4242')
    const m = await t.req('GET', '/v1/mandate', { token: a.token })
    expect(m.body).toMatchObject({ enabled: true, threshold: 300, refill: 2000, ceiling: 10000, card: { brand: 'visa', last4: '4242' } })
  })

  test('PUT adjusts the limits; disabling and re-enabling keeps the card', async () => {
    const a = await t.signup()
    await consentSandbox(t, a.token, { threshold: 300, refill: 2000, ceiling: 10000 })
    const put = await t.req('PUT', '/v1/mandate', { token: a.token, body: { threshold: 250, ceiling: 8000 } })
    expect(put.status).toBe(200)
    expect(put.body).toMatchObject({ enabled: true, threshold: 250, refill: 2000, ceiling: 8000 })
    const off = await t.req('PUT', '/v1/mandate', { token: a.token, body: { enabled: false } })
    expect(off.body).toMatchObject({ enabled: false, card: { last4: '4242' } })
    const on = await t.req('PUT', '/v1/mandate', { token: a.token, body: { enabled: true } })
    expect(on.body).toMatchObject({ enabled: true, card: { last4: '4242' } })
  })

  test('DELETE disables and forgets the card; enabling again needs a new consent', async () => {
    const a = await t.signup()
    await consentSandbox(t, a.token, { threshold: 300, refill: 2000, ceiling: 10000 })
    const del = await t.req('DELETE', '/v1/mandate', { token: a.token })
    expect(del.status).toBe(200)
    expect(del.body).toMatchObject({ enabled: false, card: null })
    const on = await t.req('PUT', '/v1/mandate', { token: a.token, body: { enabled: true } })
    expect(on.status).toBe(400)
    expect(on.body.error).toBe('CONSENT_REQUIRED')
  })

  test('a debit that leaves the balance under the threshold runs one background refill, named by its ledger entry', async () => {
    const a = await t.signup()
    await consentSandbox(t, a.token, { threshold: 500, refill: 1000, ceiling: 5000 })
    const call = await t.req('POST', '/v1/call/test.echo', { token: a.token, body: { q: 'x' } })
    expect(call.status).toBe(200)
    expect(call.body.balance).toBe(495)
    await t.s.refiller.idle()
    expect(await redisBalance(t, a.account_id)).toBe(1495)
    const m = await t.req('GET', '/v1/mandate', { token: a.token })
    expect(m.body.refilled_this_period).toBe(1000)
    // Above the threshold again: the next call does not refill.
    await t.req('POST', '/v1/call/test.echo', { token: a.token, body: { q: 'y' } })
    await t.s.refiller.idle()
    expect(await redisBalance(t, a.account_id)).toBe(1490)

    await flushAll(t)
    const rows = await topupRows(t, a.account_id)
    expect(rows.length).toBe(1)
    expect(rows[0]).toMatchObject({ amount: 1000, balanceAfter: 1495, target: 'refill' })
    expect(rows[0]!.refId).toMatch(/^sbx_ch_/)
    expect((await pgLedger(t, a.account_id)).sum).toBe(1490)
  })

  test('a proxied request under the threshold starts the refill too (the trigger lives in debit())', async () => {
    const a = await t.signup()
    await consentSandbox(t, a.token, { threshold: 499, refill: 1000, ceiling: 5000 })
    t.fake.handler = () => Response.json({ ok: true })
    try {
      const r = await t.req('POST', '/proxy/fake/v1/chat', { token: a.token, body: { q: 1 } })
      expect(r.status).toBe(200)
    } finally {
      t.fake.handler = null
    }
    await t.s.refiller.idle()
    expect(await redisBalance(t, a.account_id)).toBe(500 - 3 + 1000)
  })

  test('a call refused for a too-low balance also starts the refill; the retry then succeeds', async () => {
    const a = await t.signup()
    await consentSandbox(t, a.token, { threshold: 100, refill: 1000, ceiling: 5000 })
    // Spend down to 0 without auto-refill, then turn it on.
    await t.req('PUT', '/v1/mandate', { token: a.token, body: { enabled: false } })
    for (let i = 0; i < 100; i++) await t.req('POST', '/v1/call/test.echo', { token: a.token, body: { q: 'x' } })
    expect(await redisBalance(t, a.account_id)).toBe(0)
    await t.req('PUT', '/v1/mandate', { token: a.token, body: { enabled: true } })
    const refused = await t.req('POST', '/v1/call/test.echo', { token: a.token, body: { q: 'x' } })
    expect(refused.status).toBe(402)
    await t.s.refiller.idle()
    const retry = await t.req('POST', '/v1/call/test.echo', { token: a.token, body: { q: 'x' } })
    expect(retry.status).toBe(200)
    expect(retry.body.balance).toBe(995)
  })

  test('the mandate snapshot reaches Postgres (no card number, brand and last 4 only)', async () => {
    const a = await t.signup()
    await consentSandbox(t, a.token, { threshold: 300, refill: 2000, ceiling: 10000 })
    await t.req('PUT', '/v1/mandate', { token: a.token, body: { ceiling: 9000 } })
    await flushAll(t)
    const rows = await t.s.db.db.select().from(mandates).where(eq(mandates.accountId, a.account_id))
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ enabled: true, threshold: 300, refill: 2000, ceiling: 9000, cardBrand: 'visa', cardLast4: '4242', gateway: 'sandbox', reason: 'update' })
    expect(JSON.stringify(rows, (_, v) => (typeof v === 'bigint' ? String(v) : v))).not.toContain(GOOD_CARD)
  })
})
