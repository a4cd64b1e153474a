/**
 * Stripe mode, against the loopback fake through the official SDK: consent via Checkout in setup
 * mode, off-session refills, explicit top-ups, credit packs via Checkout, replayed webhooks
 * credited once, an over-cap payment parked then approved (and another rejected → refunded),
 * and DELETE forgetting the card at Stripe.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { flushAll, pgLedger, redisBalance } from '../helpers/ledger'
import { consentPath, get, pathOf, postForm, topupRows } from '../helpers/money'
import { consentStripe, deliver, sessionIdOf, startStripeApp, type StripeTestApp } from '../helpers/stripe-app'

const ADMIN = 'founder-token-0123456789abcdef'
let a: StripeTestApp
beforeAll(async () => {
  a = await startStripeApp({ ADMIN_TOKEN: ADMIN, DEFAULT_BALANCE_CAP: '30000' })
})
afterAll(async () => {
  await a.close()
})

describe('consent through Stripe Checkout (setup mode)', () => {
  test('the page sends the owner to Stripe; the completed session saves the card and enables the mandate', async () => {
    const { t, stripe } = a
    const acct = await t.signup()
    const path = await consentPath(t, acct.token)
    const page = await get(t, path)
    expect(page.status).toBe(200)
    expect(page.text).toContain('Continue to Stripe')
    expect(page.text).not.toContain('name="card"')

    await t.req('PUT', '/v1/mandate', { token: acct.token, body: { threshold: 400, refill: 2000, ceiling: 10000 } })
    const r = await postForm(t, path, { threshold: 400, refill: 2000, ceiling: 10000 })
    expect(r.status).toBe(303)
    const sid = sessionIdOf(r.headers.get('location')!)
    const session = stripe.sessions.get(sid)!
    expect(session).toMatchObject({ mode: 'setup', metadata: { purpose: 'mandate', acct: acct.account_id, threshold: '400', refill: '2000', ceiling: '10000' } })
    expect(stripe.customers.get(session.customer)?.metadata).toEqual({ acct: acct.account_id })
    // Not enabled until Stripe says the card is saved.
    expect((await t.req('GET', '/v1/mandate', { token: acct.token })).body.enabled).toBe(false)

    const ev = await stripe.completeSetup(sid, '4242424242424242')
    const w = await deliver(t, ev)
    expect(w.status).toBe(200)
    expect(w.body).toMatchObject({ received: true, result: 'consent_applied' })
    const m = await t.req('GET', '/v1/mandate', { token: acct.token })
    expect(m.body).toMatchObject({ enabled: true, threshold: 400, refill: 2000, ceiling: 10000, card: { brand: 'visa', last4: '4242' } })

    // Stripe's return page completes the same setup: applied once, shown as done.
    const done = await get(t, `/mandate/done?ref=${new URL(m.body.enable_url).searchParams.get('ref')}&session_id=${sid}`)
    expect(done.status).toBe(200)
    expect(done.text).toContain('Auto-refill is on')
  })
})

describe('refills and top-ups (off-session PaymentIntents)', () => {
  test('auto-refill: one off-session charge of the refill, credited once, the entry names the PaymentIntent', async () => {
    const { t, stripe } = a
    const acct = await t.signup()
    await consentStripe(a, acct.token, { threshold: 500, refill: 2000, ceiling: 10000 })
    const call = await t.req('POST', '/v1/call/test.echo', { token: acct.token, body: { q: 'x' } })
    expect(call.body.balance).toBe(495)
    await t.s.refiller.idle()
    expect(await redisBalance(t, acct.account_id)).toBe(2495)
    const pis = [...stripe.paymentIntents.values()].filter((p) => p.metadata.acct === acct.account_id)
    expect(pis).toHaveLength(1)
    expect(pis[0]).toMatchObject({ amount: 200, currency: 'usd', status: 'succeeded', metadata: { purpose: 'refill', credits: '2000' } })
    const req = stripe.requests.find((x) => x.path === '/v1/payment_intents' && x.body.metadata?.acct === acct.account_id)!
    expect(req.body).toMatchObject({ off_session: 'true', confirm: 'true' })
    expect(req.idempotencyKey).toBe(pis[0]!.metadata.attempt)

    // Stripe also sends payment_intent.succeeded: it must not credit the same charge again.
    const healed = await deliver(t, await stripe.signedEvent('payment_intent.succeeded', pis[0]!))
    expect(healed.body).toMatchObject({ received: true, result: 'duplicate' })
    expect(await redisBalance(t, acct.account_id)).toBe(2495)
    await flushAll(t)
    const rows = await topupRows(t, acct.account_id)
    expect(rows.map((r) => [r.amount, r.refId, r.target])).toEqual([[2000, pis[0]!.id, 'refill']])
    expect((await pgLedger(t, acct.account_id)).sum).toBe(2495)
  })

  test('a refill whose answer was lost is credited by the webhook, and the lock is freed', async () => {
    const { t, stripe } = a
    const acct = await t.signup()
    await consentStripe(a, acct.token, { threshold: 100, refill: 1000, ceiling: 10000 })
    // Reserve as the refiller would, then charge at Stripe but "crash" before crediting.
    const { reserveRefill } = await import('../../src/ledger/topup')
    const res = await reserveRefill(t.s.ctx, acct.account_id, 'topup', null, 'stripe')
    if (res.kind !== 'reserved') throw new Error('not reserved')
    const m = await t.req('GET', '/v1/mandate', { token: acct.token })
    expect(m.body.enabled).toBe(true)
    const busy = await t.req('POST', '/v1/topup', { token: acct.token })
    expect(busy.status).toBe(409) // the lock (and today's top-up) is held by the lost attempt
    const paid = await t.s.payments.charge({
      accountId: acct.account_id,
      card: { brand: 'visa', last4: '4242', customerId: res.r.customerId, paymentMethodId: res.r.paymentMethodId },
      credits: res.r.credits,
      cents: 100,
      attemptId: res.r.attemptId,
      purpose: 'topup',
      month: res.r.month,
    })
    if (paid.kind !== 'paid') throw new Error(paid.kind)
    const w = await deliver(t, await stripe.signedEvent('payment_intent.succeeded', stripe.paymentIntents.get(paid.chargeId)!))
    expect(w.body).toMatchObject({ result: 'credited' })
    expect(await redisBalance(t, acct.account_id)).toBe(1500)
    expect((await t.req('GET', '/v1/mandate', { token: acct.token })).body.refilled_this_period).toBe(1000)
  })

  test('POST /v1/topup charges off-session and answers with the charge id', async () => {
    const { t, stripe } = a
    const acct = await t.signup()
    await consentStripe(a, acct.token, { threshold: 100, refill: 1000, ceiling: 10000 })
    const r = await t.req('POST', '/v1/topup', { token: acct.token, body: { amount: 3000 } })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ credits_added: 3000, balance: 3500 })
    expect(stripe.paymentIntents.get(r.body.charge_id)).toMatchObject({ amount: 300, metadata: { purpose: 'topup' } })
  })
})

describe('credit packs through Stripe Checkout (payment mode)', () => {
  test('a pack link goes straight to Checkout; the paid session is credited once, however often Stripe delivers it', async () => {
    const { t, stripe } = a
    const acct = await t.signup()
    const b = await t.req('GET', '/v1/balance', { token: acct.token })
    const r = await get(t, pathOf(b.body.links.packs[0].url))
    expect(r.status).toBe(303)
    const sid = sessionIdOf(r.headers.get('location')!)
    expect(stripe.sessions.get(sid)).toMatchObject({ mode: 'payment', amount_total: 500, client_reference_id: acct.account_id, metadata: { purpose: 'pack', credits: '5000' } })
    // Stripe sends the buyer back to our thank-you page; the credit itself comes by webhook.
    const back = await get(t, pathOf(stripe.sessions.get(sid)!.success_url))
    expect(back.status).toBe(200)
    expect(back.text).toContain('being confirmed')

    const ev = await stripe.payCheckout(sid)
    const first = await deliver(t, ev)
    expect(first.body).toMatchObject({ received: true, duplicate: false, result: 'credited' })
    const replay = await deliver(t, ev)
    expect(replay.status).toBe(200)
    expect(replay.body).toMatchObject({ received: true, duplicate: true })
    // The same payment under another event id (e.g. async_payment_succeeded): still once.
    const other = await deliver(t, await stripe.signedEvent('checkout.session.async_payment_succeeded', stripe.sessions.get(sid)!))
    expect(other.body).toMatchObject({ duplicate: false, result: 'duplicate' })
    // Concurrent redeliveries of a fresh event for the same charge: still once.
    const burst = await stripe.signedEvent('checkout.session.completed', stripe.sessions.get(sid)!)
    await Promise.all(Array.from({ length: 10 }, () => deliver(t, burst)))
    expect(await redisBalance(t, acct.account_id)).toBe(5500)
    await flushAll(t)
    expect((await topupRows(t, acct.account_id)).map((x) => [x.amount, x.target])).toEqual([[5000, 'pack']])
    expect((await pgLedger(t, acct.account_id)).sum).toBe(5500)
  })

  test('over the cap: parked (not credited), listed, approved by the founder; another rejected and refunded at Stripe', async () => {
    const { t, stripe } = a
    const acct = await t.signup()
    const b = await t.req('GET', '/v1/balance', { token: acct.token })
    const buy = async () => {
      const r = await get(t, pathOf(b.body.links.packs[1].url)) // 20000 credits
      const sid = sessionIdOf(r.headers.get('location')!)
      return deliver(t, await stripe.payCheckout(sid))
    }
    expect((await buy()).body.result).toBe('credited') // 20500 ≤ 30000
    expect((await buy()).body.result).toBe('parked') // 40500 > 30000
    expect((await buy()).body.result).toBe('parked')
    expect(await redisBalance(t, acct.account_id)).toBe(20500)

    const list = (await t.req('GET', '/admin/parked', { token: ADMIN })).body.parked.filter((p: { account_id: string }) => p.account_id === acct.account_id)
    expect(list).toHaveLength(2)
    expect(list[0]).toMatchObject({ credits: 20000, kind: 'pack', gateway: 'stripe', state: 'parked' })
    expect(list[0].charge_id).toMatch(/^pi_/)

    const ok = await t.req('POST', `/admin/parked/${list[0].id}/approve`, { token: ADMIN })
    expect(ok.body).toMatchObject({ state: 'approved', balance: 40500 })
    const no = await t.req('POST', `/admin/parked/${list[1].id}/reject`, { token: ADMIN })
    expect(no.body).toMatchObject({ state: 'rejected', balance: null })
    expect(stripe.refunds.filter((r) => r.payment_intent === list[1].charge_id)).toHaveLength(1)
    expect(stripe.refunds.some((r) => r.payment_intent === list[0].charge_id)).toBe(false)
    expect(await redisBalance(t, acct.account_id)).toBe(40500)
    await flushAll(t)
    expect((await pgLedger(t, acct.account_id)).sum).toBe(40500)
  })
})

describe('a new consent replacing a saved card', () => {
  test('detaches the replaced card at Stripe; the new one stays attached and is the one charged', async () => {
    const { t, stripe } = a
    const acct = await t.signup()
    // The account's cards still attached to its Stripe customer.
    const attached = () => [...stripe.paymentMethods.values()].filter((p) => p.customer && stripe.customers.get(p.customer)?.metadata.acct === acct.account_id)
    await consentStripe(a, acct.token, { threshold: 500, refill: 2000, ceiling: 10000 })
    const [first] = attached()
    await consentStripe(a, acct.token, { threshold: 500, refill: 2000, ceiling: 10000 }, '5555555555554444')
    const [second, ...more] = attached().filter((p) => p.id !== first!.id)
    expect(more).toEqual([])
    expect(stripe.paymentMethods.get(first!.id)!.customer).toBeNull()
    expect(stripe.requests.some((r) => r.path === `/v1/payment_methods/${first!.id}/detach`)).toBe(true)
    expect(stripe.paymentMethods.get(second!.id)!.customer).not.toBeNull()
    expect((await t.req('GET', '/v1/mandate', { token: acct.token })).body).toMatchObject({ enabled: true, card: { last4: '4444' } })
    // Stripe's return page for the same (second) session: applied once, nothing more detached.
    const detaches = stripe.requests.filter((r) => r.path.endsWith('/detach')).length
    await t.req('PUT', '/v1/mandate', { token: acct.token, body: { enabled: true } })
    expect(stripe.requests.filter((r) => r.path.endsWith('/detach')).length).toBe(detaches)
    await t.req('POST', '/v1/call/test.echo', { token: acct.token, body: { q: 'x' } })
    await t.s.refiller.idle()
    const pi = [...stripe.paymentIntents.values()].find((p) => p.metadata.acct === acct.account_id)!
    expect(pi.payment_method).toBe(second!.id)
  })
})

describe('DELETE /v1/mandate', () => {
  test('forgets the card here and detaches it at Stripe', async () => {
    const { t, stripe } = a
    const acct = await t.signup()
    await consentStripe(a, acct.token, { threshold: 100, refill: 1000, ceiling: 10000 })
    const pm = [...stripe.paymentMethods.values()].find((p) => stripe.customers.get(p.customer)?.metadata.acct === acct.account_id)!
    const del = await t.req('DELETE', '/v1/mandate', { token: acct.token })
    expect(del.body).toMatchObject({ enabled: false, card: null })
    expect(stripe.paymentMethods.get(pm.id)!.customer).toBeNull()
    expect(stripe.requests.some((r) => r.path === `/v1/payment_methods/${pm.id}/detach`)).toBe(true)
    expect((await t.req('POST', '/v1/topup', { token: acct.token })).body.reason).toBe('no_mandate')
  })
})
