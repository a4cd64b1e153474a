/**
 * A paid call (POST /v1/call/:slug) is served without the router (src/modules/call `callEndpoint`,
 * app.ts `directCall`). Its answers must be the ones the routed call gives: each request here is
 * sent to the app and to the same app built with the call routed (`callRouted`), and the two
 * answers compared — status, body and headers, less what differs from one call to the next (the
 * call id, the balance, the request id, the date) — and what each added to the request and error
 * counters. Also: what the route does not take directly
 * still reaches the router, the counters name the call's route, and on the wire the two agree.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import type { App } from '../../src/app'
import { listen, type Listener } from '../../src/listen'
import { rememberRawPath } from '../../src/proxy/raw-target'
import type { TestApp } from '../helpers/harness'
import { redisBalance } from '../helpers/ledger'
import { comparable as read, directRig, expectRefusalCounted, whileTokenLookupThrows, type Answer } from '../helpers/direct-answers'

let t: TestApp
let routed: App
let token: string
let accountId: string
const rig = directRig({ callRouted: true })
beforeAll(() => ({ t, routed, token, accountId } = rig))

/** The request and error counters, by their labels: both apps count into the one registry of `t.s`. */
async function tallies(): Promise<Map<string, number>> {
  const out = new Map<string, number>()
  for (const name of ['pab_http_requests_total', 'pab_api_errors_total', 'pab_rate_limit_rejections_total']) {
    for (const v of (await t.s.metrics.registry.getSingleMetric(name)!.get()).values) out.set(`${name} ${JSON.stringify(v.labels)}`, v.value)
  }
  return out
}

/** What one request added to the counters. */
async function counted(send: () => Promise<Answer>): Promise<{ answer: Answer; counted: Record<string, number> }> {
  const before = await tallies()
  const answer = await send()
  const delta: Record<string, number> = {}
  for (const [k, v] of await tallies()) if (v !== (before.get(k) ?? 0)) delta[k] = v - (before.get(k) ?? 0)
  return { answer, counted: delta }
}

/** The same request through both apps: equal answers, counted alike. Returns the direct one. */
async function same(make: () => Request): Promise<Answer> {
  const direct = await counted(async () => read(await t.app.handle(make())))
  const viaRouter = await counted(async () => read(await routed.handle(make())))
  expect(direct).toEqual(viaRouter)
  return direct.answer
}

type Init = Omit<RequestInit, 'headers'> & { headers?: Record<string, string>; token?: string }
const req = (path: string, init: Init = {}) => () =>
  new Request(`http://pab.test${path}`, {
    method: 'POST',
    body: '{"q":"hello"}',
    ...init,
    headers: { authorization: `Bearer ${init.token ?? token}`, 'content-type': 'application/json', ...init.headers },
  })

describe('a paid call answers as the routed call does', () => {
  test('a good call: the provider\'s answer, charged the same', async () => {
    const before = await redisBalance(t, accountId)
    const a = await same(req('/v1/call/test.echo'))
    expect(a.status).toBe(200)
    expect(a.body).toMatchObject({ slug: 'test.echo', charged: 5, result: { echo: { q: 'hello' } } })
    expect(await redisBalance(t, accountId)).toBe(before - 10)
  })

  test('an unknown slug, a body that is not JSON, params the capability\'s schema refuses', async () => {
    expect((await same(req('/v1/call/test.nosuch'))).status).toBe(404)
    expect((await same(req('/v1/call/test.echo', { body: '{"q":' }))).status).toBe(400)
    expect((await same(req('/v1/call/test.search', { body: '{}' }))).status).toBe(400)
    expect((await same(req('/v1/call/test.echo', { body: '{"q":"a\\u0000b"}' }))).status).toBe(400)
  })

  test('a control character in the query: BAD_REQUEST, after the admission (no token → UNAUTHORIZED)', async () => {
    const a = await same(req('/v1/call/test.echo?x=a%01b'))
    expect(a.status).toBe(400)
    expect(a.body).toMatchObject({ error: 'BAD_REQUEST', field: 'x' })
    expect((await same(req('/v1/call/test.echo?x=a%01b', { headers: { authorization: '' } }))).status).toBe(401)
    expect((await same(req('/v1/call/test.echo?note=%E2%80%AE'))).status).toBe(400)
  })

  test('a control character in the slug, and a slug that does not decode (the route\'s params schema)', async () => {
    expect((await same(req('/v1/call/test.e%01cho'))).body).toMatchObject({ error: 'BAD_REQUEST', field: 'slug' })
    expect((await same(req('/v1/call/test.e%01cho', { headers: { authorization: '' } }))).status).toBe(401)
    expect((await same(req('/v1/call/test%E0%A4%A'))).status).toBe(400)
    expect((await same(req('/v1/call/test%2Eecho'))).status).toBe(200)
  })

  test('no token, and an unknown one → UNAUTHORIZED', async () => {
    expect((await same(req('/v1/call/test.echo', { headers: { authorization: '' } }))).status).toBe(401)
    expect((await same(req('/v1/call/test.echo', { token: 'sk_nope' }))).status).toBe(401)
  })

  test('a malformed Idempotency-Key → BAD_REQUEST', async () => {
    expect((await same(req('/v1/call/test.echo', { headers: { 'idempotency-key': 'caf\u00e9' } }))).status).toBe(400)
  })

  test('a balance short of the price → 402', async () => {
    const poor = await t.signup()
    const balance = await redisBalance(t, poor.account_id)
    // One direct call leaves less than the price: both paths then answer 402.
    expect((await t.app.handle(req('/v1/call/test.pricey', { token: poor.token })())).status).toBe(200)
    expect(balance - 300).toBeLessThan(300)
    expect((await same(req('/v1/call/test.pricey', { token: poor.token }))).status).toBe(402)
    expect(await redisBalance(t, poor.account_id)).toBe(balance - 300)
  })

  test('an Idempotency-Key replay: the first answer again, charged once', async () => {
    const key = `replay-${Math.random().toString(36).slice(2)}`
    const make = req('/v1/call/test.echo', { headers: { 'idempotency-key': key } })
    const first = await read(await t.app.handle(make()))
    const before = await redisBalance(t, accountId)
    const a = await same(make)
    expect(a).toEqual(first)
    expect(await redisBalance(t, accountId)).toBe(before)
  })

  test('a body past MAX_BODY_BYTES: declared, refused on arrival; chunked, refused as it is read', async () => {
    const declared = await same(req('/v1/call/test.echo', { body: 'x'.repeat(1001), headers: { authorization: '', 'content-length': '1001' } }))
    expect(declared.status).toBe(413)
    const stream = () =>
      new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(new TextEncoder().encode(`{"q":"${'x'.repeat(1200)}"}`))
          c.close()
        },
      })
    const chunked = await same(() => new Request('http://pab.test/v1/call/test.echo', { method: 'POST', body: stream(), headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } }))
    expect(chunked.status).toBe(413)
  })

  test('a provider failure → PROVIDER_ERROR, refunded', async () => {
    const before = await redisBalance(t, accountId)
    const a = await same(req('/v1/call/test.fail'))
    expect(a.status).toBe(502)
    expect(a.body).toMatchObject({ error: 'PROVIDER_ERROR', refunded: true })
    expect(await redisBalance(t, accountId)).toBe(before)
  })

  test('an error nobody planned for → INTERNAL with the request id, as the router renders it', async () => {
    const a = await whileTokenLookupThrows(t, () => same(req('/v1/call/test.echo')))
    expect(a.status).toBe(500)
    expect(a.body).toMatchObject({ error: 'INTERNAL', request_id: '…' })
  })

  test('the caller\'s X-Request-Id is echoed', async () => {
    const res = await t.app.handle(req('/v1/call/test.echo', { headers: { 'x-request-id': 'trace-1' } })())
    expect(res.headers.get('x-request-id')).toBe('trace-1')
  })
})

describe('what the direct path does not take still goes to the router', () => {
  test('other methods, a trailing slash, no slug, a raw proxy target', async () => {
    expect((await same(req('/v1/call/test.echo', { method: 'GET', body: null }))).status).toBe(404)
    await same(req('/v1/call/test.echo', { method: 'HEAD', body: null }))
    await same(req('/v1/call/test.echo', { method: 'OPTIONS', body: null }))
    expect((await same(req('/v1/call/test.echo/'))).status).toBe(200)
    expect((await same(req('/v1/call/'))).status).toBe(404)
    expect((await same(req('/v1/call/test.echo/more'))).status).toBe(404)
    // A raw target the listener saw under /proxy/ that the URL parser moved here: the proxy judges it.
    const moved = () => {
      const r = req('/v1/call/test.echo')()
      rememberRawPath(r, '/proxy/fake/../../v1/call/test.echo')
      return r
    }
    expect((await same(moved)).body).toMatchObject({ error: 'PROXY_BAD_PATH' })
  })
})

test('no other POST route lives under /v1/call/, where the direct path would answer in its place', () => {
  const under = t.app.routes.filter((r) => (r.method === 'POST' || r.method === 'ALL') && r.path.startsWith('/v1/call/')).map((r) => `${r.method} ${r.path}`)
  expect([...new Set(under)]).toEqual(['POST /v1/call/:slug'])
})

test('the request and error counters name the call\'s route and the refusal, as routed', async () => {
  await expectRefusalCounted(t, '/v1/call/:slug', req('/v1/call/test.echo', { headers: { authorization: '' } })())
})

test('on the wire the two paths send the same status line, headers and body', async () => {
  const direct = await t.listen()
  const other: Listener = await listen(routed, { port: 0, hostname: '127.0.0.1', maxBodyBytes: 1000 })
  try {
    const send = async (base: string, path: string, auth: string) =>
      read(await fetch(`${base}${path}`, { method: 'POST', body: '{"q":"hi"}', headers: { authorization: auth, 'content-type': 'application/json' } }))
    for (const [path, auth] of [
      ['/v1/call/test.echo', `Bearer ${token}`],
      ['/v1/call/test.echo', ''],
      ['/v1/call/test.fail', `Bearer ${token}`],
      ['/v1/call/test.echo?x=%01', `Bearer ${token}`],
    ] as const)
      expect(await send(direct, path, auth)).toEqual(await send(other.url, path, auth))
  } finally {
    await other.stop(true)
  }
})
