/**
 * A refill charge whose outcome is unknown (the processor answered `processing`, or timed out)
 * keeps counting against the monthly ceiling after its refill lock lapses, until the outcome is
 * known: credited (then it counts as refilled) or failed (then it is released). Before, a second
 * charge after the lapse plus the first one's late webhook passed the ceiling.
 * Stripe mode against the loopback fake; paid calls under the threshold trigger the auto-refill.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { assertLedger } from '../helpers/invariants'
import { redisBalance } from '../helpers/ledger'
import { consentStripe, deliver, startStripeApp, type StripeTestApp } from '../helpers/stripe-app'

let a: StripeTestApp
beforeAll(async () => {
  a = await startStripeApp()
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

describe('a refill charge whose outcome is unknown', () => {
  test('stays counted against the ceiling after its lock lapses; the late webhook cannot pass the ceiling', async () => {
    const acct = await a.t.signup()
    await consentStripe(a, acct.token, LIMITS)

    a.stripe.chargeProcessing = true
    await callAndRefill(acct.token)
    a.stripe.chargeProcessing = false
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
    const acct = await a.t.signup()
    await consentStripe(a, acct.token, LIMITS)

    a.stripe.chargeProcessing = true
    await callAndRefill(acct.token)
    a.stripe.chargeProcessing = false
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
})
