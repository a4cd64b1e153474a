/**
 * The production listener (src/listen.ts) serves the whole app, not only the proxy:
 * ordinary routes, the client address for the per-IP limit, the request body limit on a streamed
 * (chunked) body, and the raw target on non-proxy routes resolved as any HTTP server would.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { rawRequest } from '../helpers/proxy'

let t: TestApp
let base: string
beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_PER_IP: '3', MAX_BODY_BYTES: '4096' } })
  base = await t.listen()
})
afterAll(async () => {
  await t.close()
})

describe('the listener', () => {
  test('serves ordinary routes: signup then balance', async () => {
    const s = await fetch(`${base}/v1/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: `listen-${t.prefix}@example.com` }) })
    expect(s.status).toBe(201)
    const { token } = (await s.json()) as { token: string }
    const b = await fetch(`${base}/v1/balance`, { headers: { authorization: `Bearer ${token}` } })
    expect(b.status).toBe(200)
    expect(((await b.json()) as { balance: number }).balance).toBe(500)
  })

  test('a chunked body past MAX_BODY_BYTES is refused with 413 (by Bun, before the app reads it)', async () => {
    const a = await t.signup()
    const big = new ReadableStream({
      start(c) {
        for (let i = 0; i < 4; i++) c.enqueue(new TextEncoder().encode(JSON.stringify({ q: 'x'.repeat(2000) })))
        c.close()
      },
    })
    const r = await fetch(`${base}/v1/call/test.echo`, { method: 'POST', body: big, duplex: 'half', headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' } } as RequestInit)
    expect(r.status).toBe(413)
  })

  test('unauthenticated requests are counted per client address (the socket’s)', async () => {
    const statuses: number[] = []
    for (let i = 0; i < 4; i++) statuses.push((await rawRequest(base, '/v1/public-stats', {}, 'GET', '', '127.0.0.2')).status)
    expect(statuses).toEqual([200, 200, 200, 429])
    // Another client address still has its own allowance.
    expect((await rawRequest(base, '/v1/public-stats', {}, 'GET', '', '127.0.0.3')).status).toBe(200)
  })

  test('outside /proxy/, dot segments resolve as usual', async () => {
    const r = await rawRequest(base, '/v1/../status')
    expect(r.status).toBe(200)
    expect(r.body.status).toBeDefined()
  })
})
