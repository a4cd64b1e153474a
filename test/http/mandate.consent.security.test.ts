/**
 * The consent link (enable_url) is handed to agents, which cannot use PUT /v1/mandate (operator
 * only). Holding the link must not let anyone pre-set the auto-refill limits: the limits are the
 * operator's (PUT /v1/mandate) or the defaults, the page shows them, and a form carrying other
 * limits is refused — in sandbox mode and on the way to Stripe Checkout alike.
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
