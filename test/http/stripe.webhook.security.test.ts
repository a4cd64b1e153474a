/**
 * The Stripe webhook accepts only what Stripe signed with this endpoint's secret: a forged,
 * tampered, unsigned or stale delivery is refused and changes nothing. In sandbox mode the
 * endpoint does not exist (NOT_CONFIGURED).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import Stripe from 'stripe'
import { startTestApp } from '../helpers/harness'
import { redisBalance } from '../helpers/ledger'
import { pathOf, get } from '../helpers/money'
import { deliver, sessionIdOf, startStripeApp, type StripeTestApp } from '../helpers/stripe-app'

let a: StripeTestApp
beforeAll(async () => {
  a = await startStripeApp()
})
afterAll(async () => {
  await a.close()
})

async function paidSessionEvent(token: string) {
  const b = await a.t.req('GET', '/v1/balance', { token })
  const r = await get(a.t, pathOf(b.body.links.packs[0].url))
  return a.stripe.payCheckout(sessionIdOf(r.headers.get('location')!))
}

describe('webhook signatures', () => {
  test('signed with another secret, tampered, unsigned, or too old → BAD_REQUEST; nothing credited', async () => {
    const { t, stripe } = a
    const acct = await t.signup()
    const good = await paidSessionEvent(acct.token)
    const forged = await stripe.signedEvent('checkout.session.completed', JSON.parse(good.payload).data.object, { secret: 'whsec_attacker' })
    const tampered = { ...good, payload: good.payload.replace('"credits":"5000"', '"credits":"50000"') }
    expect(tampered.payload).not.toBe(good.payload)
    const stale = await Stripe.webhooks.generateTestHeaderStringAsync({
      payload: good.payload,
      secret: stripe.webhookSecret,
      timestamp: Math.floor(Date.now() / 1000) - 3600,
    })
    for (const [name, res] of [
      ['forged', await deliver(t, forged)],
      ['tampered', await deliver(t, tampered)],
      ['unsigned', await deliver(t, good, '')],
      ['stale', await deliver(t, good, stale)],
      ['garbage', await deliver(t, { ...good, payload: 'not json' })],
    ] as const) {
      expect(res.status, name).toBe(400)
      expect(res.body, name).toMatchObject({ error: 'BAD_REQUEST', field: 'Stripe-Signature' })
    }
    expect(await redisBalance(t, acct.account_id)).toBe(500)
    // The genuine delivery still works afterwards.
    expect((await deliver(t, good)).body).toMatchObject({ result: 'credited' })
    expect(await redisBalance(t, acct.account_id)).toBe(5500)
  })

  test('events the service does not use are acknowledged and ignored', async () => {
    const { t, stripe } = a
    const r = await deliver(t, await stripe.signedEvent('customer.created', { id: 'cus_x', object: 'customer' }))
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ received: true, result: 'ignored' })
  })

  test('sandbox mode: the webhook answers NOT_CONFIGURED', async () => {
    const t = await startTestApp()
    try {
      const r = await t.req('POST', '/webhooks/stripe', { body: { id: 'evt_1' }, headers: { 'stripe-signature': 't=1,v1=00' } })
      expect(r.status).toBe(503)
      expect(r.body.error).toBe('NOT_CONFIGURED')
    } finally {
      await t.close()
    }
  })
})
