/**
 * A refill charge whose outcome is unknown (the processor answered `processing`, or timed out)
 * keeps counting against the monthly ceiling after its refill lock lapses, until the outcome is
 * known: credited (then it counts as refilled) or failed (then it is released). Before, a second
 * charge after the lapse plus the first one's late webhook passed the ceiling.
 * The outcome comes from Stripe's webhook or, once the lock has lapsed, from the next refill's
 * look-up of the attempt at Stripe — the only way to learn of a charge that never reached Stripe
 * (no PaymentIntent, no webhook), which before held the ceiling for the rest of the month.
 * Stripe mode against the loopback fake, behind a TCP relay the test can cut; paid calls under the
 * threshold trigger the auto-refill.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { nextHktMidnight } from '../../src/clock'
import { toHktNoon, awayFromHktMonthEnd } from '../helpers/clock-place'
import { assertLedger } from '../helpers/invariants'
import { redisBalance } from '../helpers/ledger'
import { consentStripe, deliver, startStripeApp, type StripeTestApp } from '../helpers/stripe-app'

let a: StripeTestApp
beforeAll(async () => {
  a = await startStripeApp({}, { faultProxy: true })
  // The ceiling is the HKT month's: the lapses these tests step through stay inside one month.
  awayFromHktMonthEnd(a.t.clock)
})
afterAll(async () => {
  await a.close()
})

const LIMITS = { threshold: 5000, refill: 1000, ceiling: 1000 }
const LOCK_LAPSE_MS = 121_000

/** A paid call under the threshold, and the background refill it starts. */
async function callAndRefill(token: string) {
  const r = await a.t.req('POST', '/v1/call/test.echo', { token, body: { q: 'x' } })
  expect(r.status).toBe(200)
  await a.t.s.refiller.idle()
}

const piOf = (acct: string) => [...a.stripe.paymentIntents.values()].filter((pi) => pi.metadata?.acct === acct)

/** A consented account whose first refill charge Stripe leaves `processing`: its outcome unknown. */
async function pendingRefill() {
  const acct = await a.t.signup()
  await consentStripe(a, acct.token, LIMITS)
  a.stripe.chargeProcessing = true
  await callAndRefill(acct.token)
  a.stripe.chargeProcessing = false
  return acct
}

describe('a refill charge whose outcome is unknown', () => {
  test('stays counted against the ceiling after its lock lapses; the late webhook cannot pass the ceiling', async () => {
    const acct = await pendingRefill()
    expect(piOf(acct.account_id)).toHaveLength(1)

    // The lock lapses; another refill would now fit the ceiling only if the pending one were forgotten.
    a.t.clock.advance(LOCK_LAPSE_MS)
    await callAndRefill(acct.token)
    expect(piOf(acct.account_id)).toHaveLength(1)
    const topup = await a.t.req('POST', '/v1/topup', { token: acct.token })
    expect(topup.status).toBe(409)
    expect(topup.body).toMatchObject({ error: 'CONFLICT', ceiling: 1000 })
    expect(piOf(acct.account_id)).toHaveLength(1)

    // The late answer: credited once, counted as refilled, nothing pending any more.
    const [pi] = piOf(acct.account_id)
    const w = await deliver(a.t, await a.stripe.signedEvent('payment_intent.succeeded', { ...pi, status: 'succeeded' }))
    expect(w.body).toMatchObject({ result: 'credited' })
    const m = await a.t.req('GET', '/v1/mandate', { token: acct.token })
    expect(m.body).toMatchObject({ refilled_this_period: 1000, pending_this_period: 0, ceiling: 1000 })
    expect(await redisBalance(a.t, acct.account_id)).toBe(500 - 5 - 5 + 1000)
    await assertLedger(a.t.s, [{ account: acct.account_id, balance: await redisBalance(a.t, acct.account_id) }])
  })

  test('a late failure releases the pending amount: the next refill may charge', async () => {
    const acct = await pendingRefill()
    const [pi] = piOf(acct.account_id)
    expect((await a.t.req('GET', '/v1/mandate', { token: acct.token })).body).toMatchObject({ refilled_this_period: 0, pending_this_period: 1000 })

    const failed = { ...pi, status: 'requires_payment_method', last_payment_error: { code: 'card_declined', decline_code: 'insufficient_funds', message: 'Your card has insufficient funds.' } }
    const w = await deliver(a.t, await a.stripe.signedEvent('payment_intent.payment_failed', failed))
    expect(w.status, w.text).toBe(200)
    expect(w.body).toMatchObject({ result: 'released' })
    expect((await a.t.req('GET', '/v1/mandate', { token: acct.token })).body).toMatchObject({ refilled_this_period: 0, pending_this_period: 0 })

    // The failure freed the lock and the ceiling (auto-refill backs off an hour after a decline;
    // an explicit top-up may charge at once).
    const topup = await a.t.req('POST', '/v1/topup', { token: acct.token })
    expect(topup.status, topup.text).toBe(200)
    expect(piOf(acct.account_id)).toHaveLength(2)
    expect((await a.t.req('GET', '/v1/mandate', { token: acct.token })).body).toMatchObject({ refilled_this_period: 1000, pending_this_period: 0 })
    await assertLedger(a.t.s, [{ account: acct.account_id, balance: await redisBalance(a.t, acct.account_id) }])
  })

  test('a charge that never reached Stripe is released once its lock lapses: the next refill charges', async () => {
    const acct = await a.t.signup()
    await consentStripe(a, acct.token, LIMITS)

    a.proxy!.down()
    await callAndRefill(acct.token)
    a.proxy!.up()
    expect(piOf(acct.account_id)).toHaveLength(0)
    expect((await a.t.req('GET', '/v1/mandate', { token: acct.token })).body).toMatchObject({ refilled_this_period: 0, pending_this_period: 1000 })

    // While the lock holds, the attempt may still be in flight somewhere: it is left alone.
    a.t.clock.advance(60_000)
    const busy = await a.t.req('POST', '/v1/topup', { token: acct.token })
    expect(busy.status).toBe(409)
    expect(busy.body.reason).toContain('in flight')
    expect(piOf(acct.account_id)).toHaveLength(0)
    expect((await a.t.req('GET', '/v1/mandate', { token: acct.token })).body).toMatchObject({ pending_this_period: 1000 })

    // Lapsed: Stripe holds no PaymentIntent of the attempt, so it is released (no failure, no
    // back-off: no card was declined) and the refill the ceiling allows is charged.
    a.t.clock.advance(LOCK_LAPSE_MS)
    await callAndRefill(acct.token)
    expect(piOf(acct.account_id)).toHaveLength(1)
    const m = await a.t.req('GET', '/v1/mandate', { token: acct.token })
    expect(m.body).toMatchObject({ refilled_this_period: 1000, pending_this_period: 0, last_failure: null })
    expect(await redisBalance(a.t, acct.account_id)).toBe(500 - 5 - 5 + 1000)
    await assertLedger(a.t.s, [{ account: acct.account_id, balance: await redisBalance(a.t, acct.account_id) }])
  })

  test('a lost answer of a charge Stripe made is credited by the look-up, once; the webhook after it is a duplicate', async () => {
    const acct = await pendingRefill()
    const [pi] = piOf(acct.account_id)
    pi!.status = 'succeeded' // Stripe finished it; its webhook has not arrived

    a.t.clock.advance(LOCK_LAPSE_MS)
    await callAndRefill(acct.token)
    expect(piOf(acct.account_id)).toHaveLength(1) // credited, not charged again
    expect((await a.t.req('GET', '/v1/mandate', { token: acct.token })).body).toMatchObject({ refilled_this_period: 1000, pending_this_period: 0 })
    expect(await redisBalance(a.t, acct.account_id)).toBe(500 - 5 - 5 + 1000)

    const w = await deliver(a.t, await a.stripe.signedEvent('payment_intent.succeeded', pi!))
    expect(w.body).toMatchObject({ result: 'duplicate' })
    expect(await redisBalance(a.t, acct.account_id)).toBe(500 - 5 - 5 + 1000)
    expect((await a.t.req('GET', '/v1/mandate', { token: acct.token })).body).toMatchObject({ refilled_this_period: 1000, pending_this_period: 0 })
    await assertLedger(a.t.s, [{ account: acct.account_id, balance: await redisBalance(a.t, acct.account_id) }])
  })

  test('a lost answer of a charge Stripe declined is released by the look-up; the webhook after it settles nothing', async () => {
    const acct = await pendingRefill()
    const [pi] = piOf(acct.account_id)
    Object.assign(pi!, { status: 'requires_payment_method', last_payment_error: { code: 'card_declined', decline_code: 'insufficient_funds', message: 'Your card has insufficient funds.' } })

    a.t.clock.advance(LOCK_LAPSE_MS)
    await callAndRefill(acct.token)
    const m = await a.t.req('GET', '/v1/mandate', { token: acct.token })
    expect(m.body).toMatchObject({ refilled_this_period: 0, pending_this_period: 0, last_failure: { code: 'insufficient_funds' } })
    expect(piOf(acct.account_id)).toHaveLength(1) // an auto decline backs off

    const w = await deliver(a.t, await a.stripe.signedEvent('payment_intent.payment_failed', pi!))
    expect(w.body).toMatchObject({ result: 'already_settled' })
    const topup = await a.t.req('POST', '/v1/topup', { token: acct.token })
    expect(topup.status, topup.text).toBe(200)
    expect((await a.t.req('GET', '/v1/mandate', { token: acct.token })).body).toMatchObject({ refilled_this_period: 1000, pending_this_period: 0 })
    await assertLedger(a.t.s, [{ account: acct.account_id, balance: await redisBalance(a.t, acct.account_id) }])
  })
})

describe('a top-up proposal whose charge outcome is unknown', () => {
  test('is approved, not put back to pending: approving it again the next day cannot charge the card twice', async () => {
    const t = a.t
    // The proposal's 24 h then hold the next HKT midnight (from a start within a minute before
    // midnight, "the next day" was past the proposal's expiry).
    toHktNoon(t.clock)
    const o = await t.signup()
    await consentStripe(a, o.token, { threshold: 100, refill: 2000, ceiling: 20000 })
    const ag = (await t.req('POST', '/v1/agents', { token: o.token, body: { name: 'spender' } })).body
    const p = (await t.req('POST', '/v1/proposals', { token: ag.token, body: { kind: 'topup', value: 2000, reason: 'batch' } })).body
    expect(p.status).toBe('pending')

    a.stripe.chargeProcessing = true
    const first = await t.req('POST', `/v1/proposals/${p.id}/approve`, { token: o.token })
    a.stripe.chargeProcessing = false
    expect(first.status).toBe(409)
    expect(first.body).toMatchObject({ error: 'CONFLICT', charge_pending: true })
    expect(piOf(o.account_id)).toHaveLength(1)
    // The card may yet be charged for it: the proposal is decided.
    expect((await t.req('GET', `/v1/proposals/${p.id}`, { token: o.token })).body.status).toBe('approved')

    // Stripe finishes the charge: the 2000 credits land, once.
    const [pi] = piOf(o.account_id)
    expect((await deliver(t, await a.stripe.signedEvent('payment_intent.succeeded', { ...pi, status: 'succeeded' }))).body).toMatchObject({ result: 'credited' })

    // The next HKT day, still within the proposal's 24 h (one top-up a day no longer stands in the way).
    t.clock.set(nextHktMidnight(t.clock.now()) + 60_000)
    expect(t.clock.now()).toBeLessThan(Date.parse(p.expires_at))
    const second = await t.req('POST', `/v1/proposals/${p.id}/approve`, { token: o.token })
    expect(second.status).toBe(409)
    expect(piOf(o.account_id)).toHaveLength(1)
  })
})
