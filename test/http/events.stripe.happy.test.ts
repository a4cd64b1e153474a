/**
 * The payment events from their real producers in Stripe mode (loopback Stripe fake): a declined
 * auto-refill and one that needs the card holder (authentication_required) each reach the owner's
 * webhook as a signed `refill.failed` with the reason and the page that fixes it; a successful
 * refill credited by both the refiller and Stripe's replayed webhook is one `refill.succeeded`.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startReceiver, type Receiver } from '../fakes/webhook-receiver'
import { deliverAll, subscribe } from '../helpers/events'
import { consentStripe, deliver, startStripeApp, type StripeTestApp } from '../helpers/stripe-app'

const DECLINES = '4000000000000341'
const NEEDS_AUTH = '4000002760003184'

let a: StripeTestApp
let hooks: Receiver
beforeAll(async () => {
  hooks = startReceiver()
  a = await startStripeApp({ WEBHOOKS_ALLOW_INSECURE_LOOPBACK: '1' })
})
afterAll(async () => {
  await a.close()
  hooks.stop()
})

async function refillOnce(card: string) {
  const { t } = a
  const acct = await t.signup()
  await subscribe(t, acct.token, hooks)
  await consentStripe(a, acct.token, { threshold: 500, refill: 2000, ceiling: 10000 }, card)
  await t.req('POST', '/v1/call/test.echo', { token: acct.token, body: { q: 'x' } })
  await t.s.refiller.idle()
  await deliverAll(t)
  const mine = hooks.unique().filter((e) => JSON.parse(e.body).account_id === acct.account_id)
  return { acct, mine, enableUrl: (await t.req('GET', '/v1/mandate', { token: acct.token })).body.enable_url as string }
}

describe('payment events from Stripe mode', () => {
  test('a declined auto-refill: refill.failed with reason declined, the card and the page to change it', async () => {
    const { mine, enableUrl } = await refillOnce(DECLINES)
    const failed = mine.filter((e) => e.type === 'refill.failed')
    expect(failed).toHaveLength(1)
    expect(failed[0]!.verified).toBe(true)
    expect(failed[0]!.data).toMatchObject({ reason: 'declined', code: 'generic_decline', credits: 2000, card: 'visa ending 0341', mode: 'auto', enable_url: enableUrl })
    expect(mine.some((e) => e.type === 'refill.succeeded')).toBe(false)
  })

  test('authentication_required: refill.failed says so, with the consent page', async () => {
    const { mine, enableUrl } = await refillOnce(NEEDS_AUTH)
    const failed = mine.filter((e) => e.type === 'refill.failed')
    expect(failed).toHaveLength(1)
    expect(failed[0]!.data).toMatchObject({ reason: 'authentication_required', code: 'authentication_required', enable_url: enableUrl })
  })

  test('a refill credited by the refiller and replayed by Stripe is one refill.succeeded', async () => {
    const { acct, mine } = await refillOnce('4242424242424242')
    const ok = mine.filter((e) => e.type === 'refill.succeeded')
    expect(ok).toHaveLength(1)
    expect(ok[0]!.data).toMatchObject({ credits: 2000, balance: 2495, mode: 'auto' })
    const pi = [...a.stripe.paymentIntents.values()].find((p) => p.metadata.acct === acct.account_id)!
    expect(ok[0]!.data.charge_id).toBe(pi.id)
    expect((await deliver(a.t, await a.stripe.signedEvent('payment_intent.succeeded', pi))).body.result).toBe('duplicate')
    await deliverAll(a.t)
    expect(hooks.requests.filter((r) => r.type === 'refill.succeeded' && r.data.charge_id === pi.id)).toHaveLength(1)
  })
})
