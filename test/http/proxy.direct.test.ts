/**
 * A proxied request is served without the app's router (src/proxy/index.ts `proxyEndpoint`, app.ts
 * `direct`). Its answers must be the ones the proxy's Elysia routes give: each request here is sent
 * to the app and to the same app built with the proxy routed (`proxyRouted`), and the two answers
 * compared — status, body and headers, less what differs from one call to the next (the call id,
 * the balance after it, the request id, the date). Also: what the router answers (other methods, a
 * path that does not resolve) still reaches it, and the request counters name the proxy's route.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import type { App } from '../../src/app'
import type { TestApp } from '../helpers/harness'
import { redisBalance } from '../helpers/ledger'
import { answerOf as answer, directRig, expectRefusalCounted, whileTokenLookupThrows, type Answer } from '../helpers/direct-answers'

let t: TestApp
let routed: App
let token: string
let accountId: string
const rig = directRig({ proxyRouted: true })
beforeAll(() => ({ t, routed, token, accountId } = rig))

/** The same request through both apps: equal answers. Returns the direct one. */
async function same(make: () => Request): Promise<Answer> {
  const direct = await answer(t.app, make)
  const viaRouter = await answer(routed, make)
  expect(direct).toEqual(viaRouter)
  return direct
}

const req = (path: string, init: RequestInit & { headers?: Record<string, string> } = {}) => () =>
  new Request(`http://pab.test${path}`, { method: 'POST', body: '{"q":1}', ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers } })

describe('a proxied request answers as the routed proxy does', () => {
  test('a forwarded request: the provider\'s answer, our headers, the same debit', async () => {
    const before = await redisBalance(t, accountId)
    const a = await same(req('/proxy/fake/v1/chat?x=1'))
    expect(a.status).toBe(404) // the fake's own answer for /v1/chat, passed on
    expect(a.headers['x-pab-charged']).toBe('3')
    expect(await redisBalance(t, accountId)).toBe(before - 6)
  })

  test('GET, PUT, PATCH and DELETE are forwarded the same way', async () => {
    for (const method of ['GET', 'PUT', 'PATCH', 'DELETE']) {
      const a = await same(req('/proxy/fake/v1/items', { method, body: method === 'GET' ? null : '{}' }))
      expect(a.headers['x-pab-charged']).toBe('3')
    }
  })

  test('no token, and an unknown one → UNAUTHORIZED', async () => {
    expect((await same(req('/proxy/fake/v1/chat', { headers: { authorization: '' } }))).status).toBe(401)
    expect((await same(req('/proxy/fake/v1/chat', { headers: { authorization: 'Bearer nope' } }))).status).toBe(401)
  })

  test('a body declared past MAX_BODY_BYTES is refused on arrival, before the token is looked at', async () => {
    const a = await same(req('/proxy/fake/v1/chat', { body: 'x'.repeat(1001), headers: { authorization: '', 'content-length': '1001' } }))
    expect(a.status).toBe(413)
  })

  test('a provider failure → PROVIDER_ERROR, refunded', async () => {
    t.fake.handler = () => Response.json({ error: 'down' }, { status: 503 })
    try {
      const before = await redisBalance(t, accountId)
      const a = await same(req('/proxy/fake/v1/chat'))
      expect(a.status).toBe(502)
      expect(a.body).toMatchObject({ error: 'PROVIDER_ERROR', refunded: true })
      expect(await redisBalance(t, accountId)).toBe(before)
    } finally {
      t.fake.handler = null
    }
  })

  test('an error nobody planned for → INTERNAL with the request id, as the router renders it', async () => {
    const a = await whileTokenLookupThrows(t, () => same(req('/proxy/fake/v1/chat')))
    expect(a.status).toBe(500)
    expect(a.body).toMatchObject({ error: 'INTERNAL', request_id: '…' })
  })
})

describe('what the proxy routes do not serve still goes to the router', () => {
  test('paths that do not resolve, a provider without its path, other methods', async () => {
    expect((await same(req('/proxy/fake/v2/chat'))).body).toMatchObject({ error: 'PROXY_BAD_PATH', reason: 'outside_allowed_paths' })
    expect((await same(req('/proxy/nosuch/v1/chat'))).body).toMatchObject({ error: 'PROXY_UNKNOWN_PROVIDER' })
    await same(req('/proxy/fake'))
    await same(req('/proxy/fake/v1/chat', { method: 'HEAD', body: null }))
    await same(req('/proxy/fake/v1/chat', { method: 'OPTIONS', body: null }))
  })
})

test('the request counters name the proxy\'s route, and the error counters the refusal, as routed', async () => {
  await expectRefusalCounted(t, '/proxy/:provider/*', req('/proxy/fake/v1/chat', { headers: { authorization: '' } })())
})

test('a body refused on arrival is counted under no route, as routed (the router never matched it)', async () => {
  const series = async (route: string) => {
    const m = (await t.s.metrics.registry.getSingleMetric('pab_http_requests_total')!.get()).values
    return m.filter((v) => v.labels.route === route && String(v.labels.status) === '413').reduce((n, v) => n + v.value, 0)
  }
  const counted = async (app: App) => {
    const before = { unmatched: await series('unmatched'), proxy: await series('/proxy/:provider/*') }
    await app.handle(req('/proxy/fake/v1/chat', { body: 'x'.repeat(1001), headers: { 'content-length': '1001' } })())
    return { unmatched: (await series('unmatched')) - before.unmatched, proxy: (await series('/proxy/:provider/*')) - before.proxy }
  }
  expect(await counted(routed)).toEqual({ unmatched: 1, proxy: 0 })
  expect(await counted(t.app)).toEqual({ unmatched: 1, proxy: 0 })
})
