/**
 * Refusals around the mandate: enabling before consent, malformed limits, agent tokens on the
 * operator surfaces, unknown consent refs, and consent form errors.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { consentPath, get, postForm } from '../helpers/money'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
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
