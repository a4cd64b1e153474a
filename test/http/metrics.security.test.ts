/** GET /metrics behind METRICS_TOKEN: only that bearer reads it; no account data in any label. */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { drain } from '../helpers/invariants'

const METRICS_TOKEN = 'metrics-scrape-token-0123456789'
let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { METRICS_TOKEN } })
})
afterAll(async () => {
  await t.close()
})

test('without the metrics bearer → UNAUTHORIZED, whatever other token comes along', async () => {
  const a = await t.signup()
  for (const token of [undefined, a.token, 'metrics-scrape-token-012345678X']) {
    const r = await t.req('GET', '/metrics', { token })
    expect(r.status).toBe(401)
    expect(r.body.error).toBe('UNAUTHORIZED')
  }
})

test('with it: the text, and no account id, token, e-mail or payload anywhere in it', async () => {
  const email = `m-${t.prefix}@example.com`
  const a = await t.signup(email)
  await t.req('POST', '/v1/call/test.echo', { token: a.token, body: { q: 'payload-marker' } })
  await drain(t.s.flusher)
  const r = await t.req('GET', '/metrics', { token: METRICS_TOKEN })
  expect(r.status).toBe(200)
  expect(r.text).toContain('pab_debits_total')
  for (const secret of [a.account_id, a.token, email, a.public_ref, 'payload-marker']) expect(r.text).not.toContain(secret)
})
