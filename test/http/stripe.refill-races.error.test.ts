/**
 * Money in under races (fourth pass): a charge whose outcome is still unknown when the next refill
 * is decided, and a card replaced while a refill on the old one is in flight.
 * Stripe mode against the loopback fake; paid calls under the threshold trigger the auto-refill.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { beforeHktMonthEnd } from '../helpers/clock-place'
import { redisBalance } from '../helpers/ledger'
import { readMails } from '../helpers/money'
import { consentStripe, deliver, startStripeApp, type StripeTestApp } from '../helpers/stripe-app'

const DECLINES = '4000000000000341'
const LOCK_LAPSE_MS = 121_000

let a: StripeTestApp
beforeAll(async () => {
  a = await startStripeApp({ DEFAULT_BALANCE_CAP: '30000' })
})
afterAll(async () => {
  await a.close()
})

const piOf = (acct: string) => [...a.stripe.paymentIntents.values()].filter((pi) => pi.metadata?.acct === acct)

async function callAndRefill(token: string) {
  const r = await a.t.req('POST', '/v1/call/test.echo', { token, body: { q: 'x' } })
  expect(r.status).toBe(200)
  await a.t.s.refiller.idle()
}

/**
 * A refill Stripe leaves `processing`; its lock lapses and Stripe still says so. 495 + 20000 fit the
 * cap of 30000, but not with the 20000 still pending: a second charge could only end parked, so
 * neither the auto-refill nor a top-up makes one. Then the first succeeds after all: credited, nothing parked.
 */
async function unknownChargeHoldsTheCap() {
  const { t, stripe } = a
  const acct = await t.signup()
  await consentStripe(a, acct.token, { threshold: 5000, refill: 20000, ceiling: 100000 })
  stripe.chargeProcessing = true
  await callAndRefill(acct.token)
  stripe.chargeProcessing = false
  expect(piOf(acct.account_id)).toHaveLength(1)

  t.clock.advance(LOCK_LAPSE_MS)
  await callAndRefill(acct.token)
  expect(piOf(acct.account_id)).toHaveLength(1)
  const topup = await t.req('POST', '/v1/topup', { token: acct.token })
  expect(topup.body).toMatchObject({ error: 'BALANCE_CAP', parked: false })
  expect(piOf(acct.account_id)).toHaveLength(1)

  const pi = piOf(acct.account_id)[0]!
  pi.status = 'succeeded'
  expect((await deliver(t, await stripe.signedEvent('payment_intent.succeeded', pi))).body).toMatchObject({ result: 'credited' })
  expect(await redisBalance(t, acct.account_id)).toBe(20490)
  return acct
}

describe('a refill charge whose outcome is still unknown', () => {
  test('counts against the balance cap: no second charge that would only be parked', async () => {
    await unknownChargeHoldsTheCap()
  })

  test('and still in the next HKT month: one unknown at the month’s turn is not forgotten by the cap', async () => {
    // The charge goes out a minute before 00:00 HKT on the 1st; its lock lapses in the new month,
    // whose ceiling is fresh, but the charge may still be credited.
    beforeHktMonthEnd(a.t.clock, 60_000)
    const acct = await unknownChargeHoldsTheCap()
    // Credited to the month it was charged in; the new month has refilled nothing.
    expect((await a.t.req('GET', '/v1/mandate', { token: acct.token })).body).toMatchObject({ refilled_this_period: 0, pending_this_period: 0 })
  })
})

describe('a card replaced while a refill on the old one is in flight', () => {
  test('the old card’s decline neither backs off nor is blamed on the new card', async () => {
    const { t, stripe } = a
    const email = `replaced-${t.prefix}@example.com`
    const acct = await t.signup(email)
    const limits = { threshold: 5000, refill: 2000, ceiling: 100000 }
    await consentStripe(a, acct.token, limits, DECLINES)
    stripe.chargeLatencyMs = 400
    const call = t.req('POST', '/v1/call/test.echo', { token: acct.token, body: { q: 'x' } })
    try {
      await Bun.sleep(150)
      // The owner saves a good card while the old one's refill is at Stripe.
      await consentStripe(a, acct.token, limits)
      expect((await call).status).toBe(200)
      await t.s.refiller.idle()
    } finally {
      stripe.chargeLatencyMs = 0
    }
    const m = await t.req('GET', '/v1/mandate', { token: acct.token })
    expect(m.body).toMatchObject({ enabled: true, card: { last4: '4242' }, last_failure: null })
    await t.s.mailer.idle()
    expect(readMails(t).filter((x) => x.to === email && x.subject === 'Auto-refill declined')).toHaveLength(0)

    // The new card refills at once: no hour of back-off earned by the card it replaced.
    await callAndRefill(acct.token)
    const paid = piOf(acct.account_id).filter((pi) => pi.status === 'succeeded')
    expect(paid).toHaveLength(1)
    expect(await redisBalance(t, acct.account_id)).toBe(2490)
  })
})

describe('a declined card and the agent’s top-ups', () => {
  test('at most 3 declined top-ups a HKT day reach the card; then CONFLICT until a new card or the next day', async () => {
    const { t } = a
    const acct = await t.signup()
    await consentStripe(a, acct.token, { threshold: 100, refill: 2000, ceiling: 100000 }, DECLINES)
    for (let i = 0; i < 3; i++) {
      const r = await t.req('POST', '/v1/topup', { token: acct.token })
      expect(r.body).toMatchObject({ error: 'PAYMENT_REQUIRED', reason: 'card_declined' })
    }
    const busy = await Promise.all([1, 2, 3, 4].map(() => t.req('POST', '/v1/topup', { token: acct.token })))
    for (const r of busy) expect(r.body).toMatchObject({ error: 'CONFLICT' })
    expect(busy[0]!.body.resets_at).toBeString()
    expect(busy[0]!.body.reason).toContain('/mandate?ref=')
    expect(piOf(acct.account_id)).toHaveLength(3)

    // The next HKT day the card may be tried again…
    t.clock.advance(86_400_000)
    expect((await t.req('POST', '/v1/topup', { token: acct.token })).body.reason).toBe('card_declined')
    expect(piOf(acct.account_id)).toHaveLength(4)
    // …and a new card at once.
    await t.req('POST', '/v1/topup', { token: acct.token })
    await t.req('POST', '/v1/topup', { token: acct.token })
    expect((await t.req('POST', '/v1/topup', { token: acct.token })).body.error).toBe('CONFLICT')
    await consentStripe(a, acct.token, { threshold: 100, refill: 2000, ceiling: 100000 })
    const ok = await t.req('POST', '/v1/topup', { token: acct.token })
    expect(ok.status).toBe(200)
    expect(ok.body).toMatchObject({ credits_added: 2000, balance: 2500 })
  })
})
