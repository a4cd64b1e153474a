/**
 * Stripe mode, the charges that fail: a declined refill (the owner is mailed, auto-refill backs
 * off, the agent's top-up answers PAYMENT_REQUIRED card_declined) and authentication_required
 * (the mandate is disabled, the owner is sent back to the consent page).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { redisBalance } from '../helpers/ledger'
import { readMails } from '../helpers/money'
import { consentStripe, deliver, startStripeApp, type StripeTestApp } from '../helpers/stripe-app'

const DECLINES = '4000000000000341'
const NEEDS_AUTH = '4000002760003184'

let a: StripeTestApp
beforeAll(async () => {
  a = await startStripeApp()
})
afterAll(async () => {
  await a.close()
})

const chargesOf = (acct: string) => [...a.stripe.paymentIntents.values()].filter((p) => p.metadata.acct === acct)

describe('a declined refill', () => {
  test('auto: nothing credited, the owner is mailed, no new attempt for an hour', async () => {
    const { t } = a
    const email = `declined-${t.prefix}@example.com`
    const acct = await t.signup(email)
    await consentStripe(a, acct.token, { threshold: 500, refill: 2000, ceiling: 10000 }, DECLINES)
    await t.req('POST', '/v1/call/test.echo', { token: acct.token, body: { q: 'x' } })
    await t.s.refiller.idle()
    expect(await redisBalance(t, acct.account_id)).toBe(495)
    expect(chargesOf(acct.account_id)).toHaveLength(1)
    const m = await t.req('GET', '/v1/mandate', { token: acct.token })
    expect(m.body).toMatchObject({ enabled: true, refilled_this_period: 0, last_failure: { code: 'generic_decline' } })
    await t.s.mailer.idle()
    const mail = readMails(t).find((x) => x.to === email)!
    expect(mail.subject).toBe('Auto-refill declined')
    expect(mail.text).toContain(m.body.enable_url)

    // Backing off: more calls under the threshold do not hammer the card…
    await t.req('POST', '/v1/call/test.echo', { token: acct.token, body: { q: 'x' } })
    await t.s.refiller.idle()
    expect(chargesOf(acct.account_id)).toHaveLength(1)
    // …until the hour has passed.
    t.clock.advance(3600 * 1000 + 1)
    await t.req('POST', '/v1/call/test.echo', { token: acct.token, body: { q: 'x' } })
    await t.s.refiller.idle()
    expect(chargesOf(acct.account_id)).toHaveLength(2)
  })

  test('explicit top-up: 402 PAYMENT_REQUIRED reason card_declined; the day’s top-up is not used up', async () => {
    const { t } = a
    const acct = await t.signup()
    await consentStripe(a, acct.token, { threshold: 100, refill: 2000, ceiling: 10000 }, DECLINES)
    const r = await t.req('POST', '/v1/topup', { token: acct.token })
    expect(r.status).toBe(402)
    expect(r.body).toMatchObject({ error: 'PAYMENT_REQUIRED', reason: 'card_declined', price: 2000, balance: 500 })
    expect(r.body.human_readable).toContain('visa ending 0341')
    expect(r.body.human_readable).toContain(r.body.enable_url)
    const again = await t.req('POST', '/v1/topup', { token: acct.token })
    expect(again.body.reason).toBe('card_declined') // declined again, not "already today"
    expect(await redisBalance(t, acct.account_id)).toBe(500)
    expect((await t.req('GET', '/v1/mandate', { token: acct.token })).body.refilled_this_period).toBe(0)
  })
})

describe('authentication_required', () => {
  test('auto: the mandate is disabled, the card forgotten, the owner sent to the consent page; a new consent restores it', async () => {
    const { t } = a
    const email = `sca-${t.prefix}@example.com`
    const acct = await t.signup(email)
    await consentStripe(a, acct.token, { threshold: 500, refill: 2000, ceiling: 10000 }, NEEDS_AUTH)
    await t.req('POST', '/v1/call/test.echo', { token: acct.token, body: { q: 'x' } })
    await t.s.refiller.idle()
    expect(await redisBalance(t, acct.account_id)).toBe(495)
    const m = await t.req('GET', '/v1/mandate', { token: acct.token })
    expect(m.body).toMatchObject({ enabled: false, card: null, disabled_reason: 'authentication_required' })
    await t.s.mailer.idle()
    const mail = readMails(t).find((x) => x.to === email)!
    expect(mail.subject).toContain('Action needed')
    expect(mail.text).toContain(m.body.enable_url)
    const on = await t.req('PUT', '/v1/mandate', { token: acct.token, body: { enabled: true } })
    expect(on.body).toMatchObject({ error: 'CONSENT_REQUIRED', enable_url: m.body.enable_url })
    // No more attempts while disabled.
    await t.req('POST', '/v1/call/test.echo', { token: acct.token, body: { q: 'x' } })
    await t.s.refiller.idle()
    expect(chargesOf(acct.account_id)).toHaveLength(1)

    await consentStripe(a, acct.token, { threshold: 500, refill: 2000, ceiling: 10000 })
    await t.req('POST', '/v1/call/test.echo', { token: acct.token, body: { q: 'x' } })
    await t.s.refiller.idle()
    expect(await redisBalance(t, acct.account_id)).toBe(2485)
  })

  test('explicit top-up: CONSENT_REQUIRED with the enable_url', async () => {
    const { t } = a
    const acct = await t.signup()
    await consentStripe(a, acct.token, { threshold: 100, refill: 2000, ceiling: 10000 }, NEEDS_AUTH)
    const r = await t.req('POST', '/v1/topup', { token: acct.token })
    expect(r.status).toBe(400)
    expect(r.body.error).toBe('CONSENT_REQUIRED')
    expect(r.body.enable_url).toMatch(/\/mandate\?ref=mr_/)
    expect((await t.req('GET', '/v1/mandate', { token: acct.token })).body.enabled).toBe(false)
  })
})

describe('a signed event naming no account', () => {
  test('an account id past the last shard is ignored (200), not a 500 Stripe would retry for days', async () => {
    const { t, stripe } = a
    for (const acct of ['acc_99_abcdefghijkl', 'acc_16_abcdefghijkl']) {
      const meta = { purpose: 'topup', acct, credits: '1000', month: '2025-01', attempt: 'x' }
      const ev = await stripe.signedEvent('payment_intent.succeeded', { id: `pi_noacct_${acct}`, object: 'payment_intent', status: 'succeeded', metadata: meta })
      const r = await deliver(t, ev)
      expect([acct, r.status, r.body.result]).toEqual([acct, 200, 'ignored'])
    }
  })
})
