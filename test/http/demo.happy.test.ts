/**
 * The built-in demo provider, as the README's quick start uses it: the service serves demo.echo and
 * demo.flaky itself (a real listening server at a loopback BASE_URL), so a newcomer without
 * provider keys or internet sees a charged call, a refunded failure and a 402. With a public
 * BASE_URL and DEMO_PROVIDER=auto the demo entries are not there at all.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { listen, type Listener } from '../../src/listen'
import { startTestApp, type TestApp } from '../helpers/harness'
import { freePorts } from '../helpers/redis-server'

describe('DEMO_PROVIDER=auto with a loopback BASE_URL', () => {
  let t: TestApp
  let server: Listener
  beforeAll(async () => {
    // The demo provider's base_url is BASE_URL, so the port must be known before the app is built.
    const [port] = await freePorts(1)
    t = await startTestApp({ env: { BASE_URL: `http://127.0.0.1:${port}`, DEMO_PROVIDER: 'auto' } })
    server = await listen(t.app, { port: port!, hostname: '127.0.0.1', maxBodyBytes: t.s.cfg.MAX_BODY_BYTES })
  })
  afterAll(async () => {
    await server?.stop(true)
    await t?.close()
  })

  test('/capabilities and search list the demo capabilities as demo', async () => {
    const caps = await t.req('GET', '/capabilities')
    expect(caps.body.live).toEqual(expect.arrayContaining(['demo.echo', 'demo.flaky']))
    expect(caps.body.demo).toEqual(['demo.echo', 'demo.flaky'])
    const found = await t.req('GET', '/v1/search?q=demo')
    expect(found.body.results.map((r: { slug: string }) => r.slug)).toEqual(['demo.echo', 'demo.flaky'])
    for (const r of found.body.results) {
      expect(r).toMatchObject({ demo: true, lane: 'house', status: 'live' })
      expect(r.description).toStartWith('DEMO —')
    }
    // The file's own capabilities are not marked demo.
    const other = await t.req('GET', '/v1/search?q=echo')
    expect(other.body.results.find((r: { slug: string }) => r.slug === 'test.echo').demo).toBeUndefined()
  })

  test('signup → demo.echo charged → demo.flaky refunded → calls until 402', async () => {
    const a = await t.signup()
    expect(a.balance).toBe(500)

    const echo = await t.req('POST', '/v1/call/demo.echo', { token: a.token, body: { hello: 'world' } })
    expect(echo.status).toBe(200)
    expect(echo.body).toMatchObject({ slug: 'demo.echo', charged: 25, balance: 475, provider_status: 200 })
    expect(echo.body.result).toEqual({ demo: true, echo: { hello: 'world' } })

    const flaky = await t.req('POST', '/v1/call/demo.flaky', { token: a.token, body: {} })
    expect(flaky.status).toBe(502)
    expect(flaky.body).toMatchObject({ error: 'PROVIDER_ERROR', refunded: true, provider_status: 503, balance: 475 })
    expect((await t.req('GET', '/v1/balance', { token: a.token })).body.balance).toBe(475)

    let paid = 0
    let last = echo
    for (let i = 0; i < 40 && last.status === 200; i++) {
      last = await t.req('POST', '/v1/call/demo.echo', { token: a.token, body: { i } })
      if (last.status === 200) paid++
    }
    expect(paid).toBe(19)
    expect(last.status).toBe(402)
    expect(last.body).toMatchObject({ error: 'PAYMENT_REQUIRED', reason: 'insufficient_balance', balance: 0, price: 25 })
  })

  test('the demo endpoints answer directly too (they are the provider, nothing is charged there)', async () => {
    const r = await fetch(`${t.s.cfg.BASE_URL}/demo/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"x":1}' })
    expect(r.status).toBe(200)
    expect(await r.json()).toEqual({ demo: true, echo: { x: 1 } })
    expect((await fetch(`${t.s.cfg.BASE_URL}/demo/flaky`, { method: 'POST' })).status).toBe(503)
  })
})

describe('DEMO_PROVIDER=auto with a public BASE_URL', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await startTestApp({ env: { BASE_URL: 'https://pab.example.com', DEMO_PROVIDER: 'auto' } })
  })
  afterAll(async () => {
    await t?.close()
  })

  test('the demo capabilities, their search results and routes are absent', async () => {
    const caps = await t.req('GET', '/capabilities')
    expect([...caps.body.live, ...caps.body.paused, ...caps.body.unavailable].filter((s: string) => s.startsWith('demo.'))).toEqual([])
    expect(caps.body.demo).toEqual([])
    expect((await t.req('GET', '/v1/search?q=demo')).body.results).toEqual([])
    const a = await t.signup()
    const call = await t.req('POST', '/v1/call/demo.echo', { token: a.token, body: {} })
    expect(call.status).toBe(404)
    expect(call.body.error).toBe('UNKNOWN_API')
    expect((await t.req('POST', '/demo/echo', { body: {} })).status).toBe(404)
  })
})

describe('DEMO_PROVIDER=on with a public BASE_URL', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await startTestApp({ env: { BASE_URL: 'https://pab.example.com', DEMO_PROVIDER: 'on' } })
  })
  afterAll(async () => {
    await t?.close()
  })

  test('an explicit on loads the demo provider, pointed at BASE_URL', async () => {
    expect((await t.req('GET', '/capabilities')).body.demo).toEqual(['demo.echo', 'demo.flaky'])
    expect(t.s.catalog.providers.get('demo')!.base_url).toBe('https://pab.example.com/demo')
  })
})
