/**
 * The sandbox credits any balance for the public test card, and the demo provider sells nothing
 * real: on a local quick start (a loopback BASE_URL, PAYMENTS=sandbox without
 * PAYMENTS_SANDBOX_PUBLIC, DEMO_PROVIDER=auto) their pages and endpoints answer only clients on
 * this machine, whatever interface the server listens on. A client elsewhere — here the address
 * a trusted reverse proxy names in X-Forwarded-For, as edge/client-ip.ts reads it — is refused
 * (403 FORBIDDEN) and nothing is credited or saved. Opted public, they serve everyone as before.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp, type TestResponse } from '../helpers/harness'
import { get, GOOD_CARD, pathOf, postForm } from '../helpers/money'

/** Peers as a trusted proxy on 127.0.0.1 names them. */
const ELSEWHERE = ['203.0.113.9', '2001:db8::7', '::ffff:198.51.100.4', '10.1.2.3']
const THIS_MACHINE = ['127.0.0.1', '127.0.0.2', '::1', '::ffff:127.0.0.1']

const from = (peer: string) => ({ 'x-forwarded-for': peer })

interface Links {
  pack: string
  packPage: string
  consent: string
}

async function linksOf(t: TestApp, token: string): Promise<Links> {
  const b = await t.req('GET', '/v1/balance', { token })
  const m = await t.req('GET', '/v1/mandate', { token })
  return { pack: pathOf(b.body.links.packs[0].url), packPage: pathOf(b.body.links.buy_credits), consent: pathOf(m.body.enable_url) }
}

/** Every sandbox page, consent page and demo endpoint, as `peer` reaches them. */
async function everySurface(t: TestApp, l: Links, peer: string): Promise<[string, TestResponse][]> {
  const h = from(peer)
  const json = { ...h, 'content-type': 'application/json' }
  return [
    ['GET pack page', await get(t, l.packPage, h)],
    ['GET pack', await get(t, l.pack, h)],
    ['POST pack', await postForm(t, l.pack, { card: GOOD_CARD }, h)],
    ['GET /topup/done', await get(t, '/topup/done', h)],
    ['GET consent', await get(t, l.consent, h)],
    ['POST consent', await postForm(t, l.consent, { card: GOOD_CARD }, h)],
    ['GET /mandate/done', await get(t, `${l.consent.replace('/mandate?', '/mandate/done?')}&session_id=cs_x`, h)],
    ['POST /demo/echo', await t.req('POST', '/demo/echo', { body: { hi: 1 }, headers: json })],
    ['POST /demo/flaky', await t.req('POST', '/demo/flaky', { body: {}, headers: json })],
  ]
}

describe('a local quick start: sandbox and demo answer this machine only', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await startTestApp({
      env: { BASE_URL: 'http://localhost:8080', PAYMENTS_SANDBOX_PUBLIC: '0', DEMO_PROVIDER: 'auto', TRUSTED_PROXIES: '127.0.0.1' },
    })
  })
  afterAll(() => t?.close())

  for (const peer of ELSEWHERE)
    test(`a client at ${peer} is refused on every sandbox, consent and demo route; nothing is credited or saved`, async () => {
      const a = await t.signup()
      const l = await linksOf(t, a.token)
      for (const [name, r] of await everySurface(t, l, peer)) {
        expect([name, r.status]).toEqual([name, 403])
        expect(r.text).toContain('FORBIDDEN')
      }
      const b = await t.req('GET', '/v1/balance', { token: a.token })
      expect(b.body.balance).toBe(500)
      const m = await t.req('GET', '/v1/mandate', { token: a.token })
      expect(m.body.enabled).toBe(false)
      // The refusal is JSON for an API client, naming why.
      const api = await get(t, l.pack, { ...from(peer), accept: 'application/json' })
      expect(api.status).toBe(403)
      expect(api.body).toMatchObject({ error: 'FORBIDDEN' })
      expect(api.body.role).toContain('this machine')
    })

  for (const peer of THIS_MACHINE)
    test(`a client at ${peer} is served: the pack is credited, the card saved, the demo answers`, async () => {
      const a = await t.signup()
      const l = await linksOf(t, a.token)
      const served = Object.fromEntries((await everySurface(t, l, peer)).map(([name, r]) => [name, r.status]))
      expect(served).toMatchObject({ 'GET pack page': 200, 'GET pack': 200, 'POST pack': 200, 'GET consent': 200, 'POST consent': 200, 'POST /demo/echo': 200, 'POST /demo/flaky': 503 })
      expect((await t.req('GET', '/v1/balance', { token: a.token })).body.balance).toBe(5500)
      expect((await t.req('GET', '/v1/mandate', { token: a.token })).body.enabled).toBe(true)
    })
})

describe('opted public (PAYMENTS_SANDBOX_PUBLIC=1, DEMO_PROVIDER=on): every client is served', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await startTestApp({ env: { PAYMENTS_SANDBOX_PUBLIC: '1', DEMO_PROVIDER: 'on', TRUSTED_PROXIES: '127.0.0.1' } })
  })
  afterAll(() => t?.close())

  test('a client at 203.0.113.9 buys the pack and saves the card', async () => {
    const a = await t.signup()
    const l = await linksOf(t, a.token)
    const served = Object.fromEntries((await everySurface(t, l, '203.0.113.9')).map(([name, r]) => [name, r.status]))
    expect(served).toMatchObject({ 'GET pack': 200, 'POST pack': 200, 'POST consent': 200, 'POST /demo/echo': 200 })
    expect((await t.req('GET', '/v1/balance', { token: a.token })).body.balance).toBe(5500)
  })
})
