/**
 * Refusals around the mandate: enabling before consent, malformed limits, agent tokens on the
 * operator surfaces, unknown consent refs, consent form errors, and Stripe return pages naming a
 * session Stripe does not know.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { consentPath, get, postForm } from '../helpers/money'
import { startStripeApp, type StripeTestApp } from '../helpers/stripe-app'

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

describe('mandate refusals', () => {
  test('enabled: true before the consent flow → CONSENT_REQUIRED with the enable_url', async () => {
    const a = await t.signup()
    const r = await t.req('PUT', '/v1/mandate', { token: a.token, body: { enabled: true, threshold: 100 } })
    expect(r.status).toBe(400)
    expect(r.body.error).toBe('CONSENT_REQUIRED')
    expect(r.body.enable_url).toMatch(/^http:\/\/pab\.test\/mandate\?ref=mr_/)
    expect(r.body.message).toContain(r.body.enable_url)
    // Refused as a whole: the threshold did not change either.
    expect((await t.req('GET', '/v1/mandate', { token: a.token })).body).toMatchObject({ enabled: false, threshold: 1000 })
  })

  test('malformed limits → BAD_REQUEST naming the field', async () => {
    const a = await t.signup()
    const cases: [Record<string, unknown>, string][] = [
      [{ threshold: -1 }, 'threshold'],
      [{ refill: 1.5 }, 'refill'],
      [{ ceiling: 'lots' }, 'ceiling'],
      [{ enabled: 'yes' }, 'enabled'],
      [{ refill: 5 }, 'refill'], // under the card minimum ($0.50 = 500 credits)
      [{ refill: 1005 }, 'refill'], // not a whole number of cents
      [{ threshold: 2_000_000_000 }, 'threshold'],
      [{ treshold: 100 }, 'treshold'], // a typo is refused, not ignored
    ]
    for (const [body, field] of cases) {
      const r = await t.req('PUT', '/v1/mandate', { token: a.token, body })
      expect(r.status, JSON.stringify(body)).toBe(400)
      expect(r.body.error).toBe('BAD_REQUEST')
      expect(r.body.field, JSON.stringify(body)).toBe(field)
    }
  })

  test('PUT and DELETE are the operator’s: an agent token → FORBIDDEN; GET is allowed', async () => {
    const a = await t.signup()
    const agent = await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'bot' } })
    const tok = agent.body.token
    expect((await t.req('GET', '/v1/mandate', { token: tok })).status).toBe(200)
    const put = await t.req('PUT', '/v1/mandate', { token: tok, body: { ceiling: 1 } })
    expect(put.status).toBe(403)
    expect(put.body.error).toBe('FORBIDDEN')
    expect((await t.req('DELETE', '/v1/mandate', { token: tok })).status).toBe(403)
    expect((await t.req('GET', '/v1/mandate')).status).toBe(401)
  })

  test('an unknown or malformed consent ref → NOT_FOUND, as a page or as JSON', async () => {
    for (const path of ['/mandate?ref=mr_AAAAAAAAAAAAAAAAAAAAAA', '/mandate?ref=..%2F', '/mandate']) {
      const page = await get(t, path)
      expect(page.status, path).toBe(404)
      expect(page.headers.get('content-type')).toContain('text/html')
      expect(page.text).toContain('NOT_FOUND')
      const json = await get(t, path, { accept: 'application/json' })
      expect(json.body.error).toBe('NOT_FOUND')
    }
    const post = await postForm(t, '/mandate?ref=mr_AAAAAAAAAAAAAAAAAAAAAA', { card: '4242424242424242' })
    expect(post.status).toBe(404)
  })

  test('the Stripe return page in sandbox mode (or with a foreign session id) completes nothing', async () => {
    const a = await t.signup()
    const path = await consentPath(t, a.token)
    const r = await get(t, path.replace('/mandate?', '/mandate/done?') + '&session_id=cs_test_other')
    expect(r.status).toBe(202)
    expect((await t.req('GET', '/v1/mandate', { token: a.token })).body.enabled).toBe(false)
  })

  test('the consent form refuses limits other than those shown, and saves nothing', async () => {
    const a = await t.signup()
    const path = await consentPath(t, a.token)
    const bad = await postForm(t, path, { threshold: 'abc', refill: 5000, ceiling: 20000, card: '4242424242424242' })
    expect(bad.status).toBe(409)
    expect(bad.text).toContain('not the auto-refill limits shown')
    const small = await postForm(t, path, { threshold: 1000, refill: 10, ceiling: 20000, card: '4242424242424242' })
    expect(small.status).toBe(409)
    expect((await t.req('GET', '/v1/mandate', { token: a.token })).body).toMatchObject({ enabled: false, card: null })
  })
})

describe('the Stripe return page (/mandate/done)', () => {
  test('a session id Stripe does not know (a typo, garbage, too long) → NOT_FOUND, never a 5xx nor an unhandled error; nothing enabled', async () => {
    const a = await st.t.signup()
    const done = (await consentPath(st.t, a.token)).replace('/mandate?', '/mandate/done?')
    const errors: string[] = []
    const log = st.t.s.log
    const error = log.error.bind(log)
    log.error = (msg, fields = {}) => {
      errors.push(msg)
      error(msg, fields)
    }
    const asked = st.stripe.requests.length
    try {
      for (const sid of ['cs_test_doesnotexist', 'a'.repeat(200), '..%2F..%2Fcustomers']) {
        const page = await get(st.t, `${done}&session_id=${sid}`)
        expect(page.status, sid).toBe(404)
        expect(page.headers.get('content-type')).toContain('text/html')
        expect(page.text).toContain('NOT_FOUND')
        const json = await get(st.t, `${done}&session_id=${sid}`, { accept: 'application/json' })
        expect(json.body.error, sid).toBe('NOT_FOUND')
      }
      // A control character is refused at the edge, as in every other field.
      expect((await get(st.t, `${done}&session_id=x%00y`)).status).toBe(400)
    } finally {
      log.error = error
    }
    expect(errors).toEqual([])
    // Only the well-formed id reached Stripe (twice: page and JSON); the others never left.
    expect(st.stripe.requests.slice(asked).map((r) => r.path)).toEqual(['/v1/checkout/sessions/cs_test_doesnotexist', '/v1/checkout/sessions/cs_test_doesnotexist'])
    expect((await st.t.req('GET', '/v1/mandate', { token: a.token })).body.enabled).toBe(false)
  })
})
