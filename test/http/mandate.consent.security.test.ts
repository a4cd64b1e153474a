/**
 * The consent link (enable_url) is handed to agents, which cannot use PUT /v1/mandate (operator
 * only). Holding the link must not let anyone pre-set the auto-refill limits: the limits are the
 * operator's (PUT /v1/mandate) or the defaults, the page shows them, and a form carrying other
 * limits is refused — in sandbox mode and on the way to Stripe Checkout alike.
 * Only the setup session the owner started last completes a consent, once: an older session's
 * return page (browser history, a reload, an agent that saw the cs_ id) or its late webhook never
 * brings back a card that was replaced or forgotten.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { consentPath, get, GOOD_CARD, postForm } from '../helpers/money'
import { deliver, sessionIdOf, startStripeApp, type StripeTestApp } from '../helpers/stripe-app'

let t: TestApp
let st: StripeTestApp
beforeAll(async () => {
  t = await startTestApp()
  st = await startStripeApp()
})
afterAll(async () => {
  await t.close()
  await st.close()
})

const mandate = async (app: TestApp, token: string) => (await app.req('GET', '/v1/mandate', { token })).body

describe('consent page limits (sandbox)', () => {
  test('a form that raises the ceiling is refused; nothing is saved', async () => {
    const a = await t.signup()
    const r = await postForm(t, await consentPath(t, a.token), { threshold: 1000, refill: 5000, ceiling: 9_999_999, card: GOOD_CARD })
    expect(r.status).toBe(409)
    expect(r.text).toContain('limits')
    expect(await mandate(t, a.token)).toMatchObject({ enabled: false, card: null, ceiling: 20000 })
  })

  test('the page shows the limits but offers no input to change them', async () => {
    const a = await t.signup()
    await t.req('PUT', '/v1/mandate', { token: a.token, body: { threshold: 300, refill: 2000, ceiling: 7000 } })
    const page = await get(t, await consentPath(t, a.token))
    expect(page.status).toBe(200)
    expect(page.text).toContain('7000 credits')
    expect(page.text).not.toMatch(/<input[^>]*type="number"/)
    expect(page.text).not.toMatch(/<input(?![^>]*type="hidden")[^>]*name="(threshold|refill|ceiling)"/)
  })

  test('the card alone saves the limits the operator set, which the page showed', async () => {
    const a = await t.signup()
    await t.req('PUT', '/v1/mandate', { token: a.token, body: { threshold: 300, refill: 2000, ceiling: 7000 } })
    const r = await postForm(t, await consentPath(t, a.token), { card: GOOD_CARD })
    expect(r.status).toBe(200)
    expect(await mandate(t, a.token)).toMatchObject({ enabled: true, threshold: 300, refill: 2000, ceiling: 7000 })
  })
})

describe('consent page limits (Stripe)', () => {
  test('a form carrying other limits never reaches Stripe Checkout', async () => {
    const a = await st.t.signup()
    const sessions = st.stripe.sessions.size
    const r = await postForm(st.t, await consentPath(st.t, a.token), { threshold: 0, refill: 5000, ceiling: 9_999_999 })
    expect(r.status).toBe(409)
    expect(st.stripe.sessions.size).toBe(sessions)
  })

  test("the completed setup enables the mandate with the operator's limits", async () => {
    const a = await st.t.signup()
    await st.t.req('PUT', '/v1/mandate', { token: a.token, body: { ceiling: 6000 } })
    const page = await get(st.t, await consentPath(st.t, a.token))
    expect(page.text).toContain('6000 credits')
    const r = await postForm(st.t, await consentPath(st.t, a.token), {})
    expect(r.status).toBe(303)
    const w = await deliver(st.t, await st.stripe.completeSetup(sessionIdOf(r.headers.get('location')!), GOOD_CARD))
    expect(w.status, w.text).toBe(200)
    expect(await mandate(st.t, a.token)).toMatchObject({ enabled: true, threshold: 1000, refill: 5000, ceiling: 6000 })
  })
})

describe('only the setup session started last completes a consent (Stripe)', () => {
  const chargesOf = (acct: string) => [...st.stripe.paymentIntents.values()].filter((p) => p.metadata.acct === acct).length
  /** Starts a setup session from the consent page; returns its id. */
  const startSetup = async (token: string) => {
    const r = await postForm(st.t, await consentPath(st.t, token), {})
    expect(r.status).toBe(303)
    return sessionIdOf(r.headers.get('location')!)
  }
  const donePath = async (token: string, sid: string) => (await consentPath(st.t, token)).replace('/mandate?', '/mandate/done?') + `&session_id=${sid}`

  test("after the card was replaced and DELETE /v1/mandate, the older session's return page is refused: auto-refill stays off, no charge", async () => {
    const { t, stripe } = st
    const acct = await t.signup()
    await t.req('PUT', '/v1/mandate', { token: acct.token, body: { threshold: 1000, refill: 2000, ceiling: 10000 } })
    const sidA = await startSetup(acct.token)
    await deliver(t, await stripe.completeSetup(sidA, GOOD_CARD))
    const sidB = await startSetup(acct.token)
    await deliver(t, await stripe.completeSetup(sidB, '5555555555554444'))
    expect((await mandate(t, acct.token)).card).toEqual({ brand: 'mastercard', last4: '4444' })
    const del = await t.req('DELETE', '/v1/mandate', { token: acct.token })
    expect(del.body).toMatchObject({ enabled: false, card: null })

    for (const sid of [sidA, sidB]) {
      const page = await get(t, await donePath(acct.token, sid))
      expect(page.status, sid).toBe(409)
      expect(page.text).toContain('no longer valid')
    }
    expect(await mandate(t, acct.token)).toMatchObject({ enabled: false, card: null })
    await t.req('POST', '/v1/call/test.echo', { token: acct.token, body: { q: 'x' } })
    await t.s.refiller.idle()
    expect(chargesOf(acct.account_id)).toBe(0)
  })

  test("a late webhook of a replaced session is acknowledged and not applied: the newer card stays", async () => {
    const { t, stripe } = st
    const acct = await t.signup()
    const sidA = await startSetup(acct.token)
    const lateA = await stripe.completeSetup(sidA, GOOD_CARD)
    expect((await deliver(t, lateA)).body).toMatchObject({ result: 'consent_applied' })
    const sidB = await startSetup(acct.token)
    await deliver(t, await stripe.completeSetup(sidB, '5555555555554444'))
    // Stripe delivers A's event again under a new event id (a resent or duplicated delivery).
    const resent = await stripe.signedEvent('checkout.session.completed', stripe.sessions.get(sidA)!)
    const w = await deliver(t, resent)
    expect(w.status).toBe(200)
    expect(w.body).toMatchObject({ received: true, result: 'consent_stale' })
    expect(await mandate(t, acct.token)).toMatchObject({ enabled: true, card: { brand: 'mastercard', last4: '4444' } })
  })

  test('a session started before the card was forgotten, or before a newer session, is refused when it completes', async () => {
    const { t, stripe } = st
    const acct = await t.signup()
    // Started, then the owner turns auto-refill off and forgets the card before finishing at Stripe.
    const before = await startSetup(acct.token)
    await t.req('DELETE', '/v1/mandate', { token: acct.token })
    expect((await deliver(t, await stripe.completeSetup(before, GOOD_CARD))).body).toMatchObject({ result: 'consent_stale' })
    expect((await get(t, await donePath(acct.token, before))).status).toBe(409)
    expect(await mandate(t, acct.token)).toMatchObject({ enabled: false, card: null })

    // Two sessions open (two tabs): the older one completing is refused, the newer one applies, once.
    const older = await startSetup(acct.token)
    const newer = await startSetup(acct.token)
    await stripe.completeSetup(older, GOOD_CARD)
    expect((await get(t, await donePath(acct.token, older))).status).toBe(409)
    expect((await mandate(t, acct.token)).enabled).toBe(false)
    await stripe.completeSetup(newer, '5555555555554444')
    const done = await get(t, await donePath(acct.token, newer))
    expect(done.status).toBe(200)
    expect(done.text).toContain('Auto-refill is on')
    expect(await mandate(t, acct.token)).toMatchObject({ enabled: true, card: { brand: 'mastercard', last4: '4444' } })
  })
})
