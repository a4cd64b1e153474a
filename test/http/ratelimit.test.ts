import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_PER_TOKEN: '5', RATE_LIMIT_PER_IP: '3', TRUSTED_PROXIES: '127.0.0.1' } })
  // Place the clock at the start of a minute so the window arithmetic is deterministic.
  t.clock.set(Math.ceil(Date.now() / 60_000) * 60_000 + 1_000)
})
afterAll(async () => {
  await t.close()
})

const fromIp = (ip: string) => ({ 'x-forwarded-for': ip })

describe('rate limits', () => {
  test('per token: the 6th request in a minute → RATE_LIMITED with Retry-After and RateLimit-* headers', async () => {
    const a = await t.signup(undefined)
    const rs = []
    for (let i = 0; i < 6; i++) rs.push(await t.req('POST', '/v1/call/test.cheap', { token: a.token, body: {} }))
    expect(rs.slice(0, 5).every((r) => r.status === 200)).toBe(true)
    const last = rs[5]!
    expect(last.status).toBe(429)
    expect(last.body.error).toBe('RATE_LIMITED')
    expect(last.body.retry_after_s).toBeGreaterThan(0)
    expect(last.headers.get('retry-after')).toBe(String(last.body.retry_after_s))
    expect(last.headers.get('ratelimit-limit')).toBe('5')
    expect(last.headers.get('ratelimit-remaining')).toBe('0')
    // Paid calls and reads share the token's budget, and a refused request costs nothing.
    expect((await t.req('GET', '/v1/balance', { token: a.token })).status).toBe(429)
    expect(Number(await t.s.ctx.redis.hget(t.s.ctx.keys.account(a.account_id), 'balance'))).toBe(495)
  })

  test('the window slides: a minute later the token may call again', async () => {
    const a = await t.signup(undefined)
    for (let i = 0; i < 5; i++) await t.req('GET', '/v1/balance', { token: a.token })
    expect((await t.req('GET', '/v1/balance', { token: a.token })).status).toBe(429)
    t.clock.advance(120_000)
    const r = await t.req('GET', '/v1/balance', { token: a.token })
    expect(r.status).toBe(200)
    expect(r.headers.get('ratelimit-remaining')).toBe('4')
  })

  test('the window slides for paid calls too: the debit reads the new minute, not the one it last used', async () => {
    const a = await t.signup(undefined)
    for (let i = 0; i < 5; i++) expect((await t.req('POST', '/v1/call/test.cheap', { token: a.token, body: {} })).status).toBe(200)
    expect((await t.req('POST', '/v1/call/test.cheap', { token: a.token, body: {} })).status).toBe(429)
    t.clock.advance(120_000)
    const r = await t.req('POST', '/v1/call/test.cheap', { token: a.token, body: {} })
    expect(r.status).toBe(200)
  })

  test('per IP for unauthenticated requests, keyed by X-Forwarded-For from a trusted proxy', async () => {
    const ip = '203.0.113.7'
    const rs = []
    for (let i = 0; i < 4; i++) rs.push(await t.req('GET', '/v1/search?q=echo', { headers: fromIp(ip) }))
    expect(rs.map((r) => r.status)).toEqual([200, 200, 200, 429])
    expect(rs[3]!.body.error).toBe('RATE_LIMITED')
    // Another client is unaffected; an invalid bearer counts as unauthenticated.
    expect((await t.req('GET', '/v1/search?q=echo', { headers: fromIp('203.0.113.8') })).status).toBe(200)
    const bad = await t.req('GET', '/v1/balance', { token: 'sk_' + 'B'.repeat(43), headers: fromIp(ip) })
    expect(bad.status).toBe(429)
    // Also on the paid route, where the token's own limit lives in the debit script.
    const badCall = await t.req('POST', '/v1/call/test.echo', { token: 'sk_' + 'B'.repeat(43), body: {}, headers: fromIp(ip) })
    expect(badCall.status).toBe(429)
    const otherIp = await t.req('POST', '/v1/call/test.echo', { token: 'sk_' + 'B'.repeat(43), body: {}, headers: fromIp('203.0.113.9') })
    expect(otherIp.status).toBe(401)
    // And on the proxy, which reads the client's address only for a request with no known token.
    const badProxy = await t.req('POST', '/proxy/fake/v1/chat', { token: 'sk_' + 'B'.repeat(43), body: {}, headers: fromIp(ip) })
    expect(badProxy.status).toBe(429)
    const proxyOtherIp = await t.req('POST', '/proxy/fake/v1/chat', { token: 'sk_' + 'B'.repeat(43), body: {}, headers: fromIp('203.0.113.10') })
    expect(proxyOtherIp.status).toBe(401)
  })

  test('an untrusted socket cannot choose its IP with X-Forwarded-For', async () => {
    const { Guard } = await import('../../src/auth/guard')
    const g = new Guard({ ...t.s.ctx, cfg: { ...t.s.cfg, TRUSTED_PROXIES: '' } }, t.s.guard.tokens)
    const req = new Request('http://x/', { headers: { 'x-forwarded-for': '1.2.3.4' } })
    expect(g.clientIp(req, '198.51.100.1')).toBe('198.51.100.1')
    expect(t.s.guard.clientIp(req, '127.0.0.1')).toBe('1.2.3.4')
  })

  test('a paid call refused before its debit (an unknown slug, bad params, a bad Idempotency-Key) still counts against the token', async () => {
    t.clock.advance(120_000) // a fresh minute for this client's signups
    const a = await t.signup(undefined)
    const refused = [
      await t.req('POST', '/v1/call/no.such.slug', { token: a.token, body: {} }),
      await t.req('POST', '/v1/call/test.echo', { token: a.token, body: { q: 7 } }),
      await t.req('POST', '/v1/call/test.cheap', { token: a.token, body: {}, headers: { 'idempotency-key': 'é' } }),
    ]
    expect(refused.map((r) => r.status)).toEqual([404, 400, 400])
    for (let i = 0; i < 2; i++) expect((await t.req('GET', '/v1/balance', { token: a.token })).status).toBe(200)
    // 3 refused + 2 reads: the limit of 5 is spent.
    const last = await t.req('POST', '/v1/call/no.such.slug', { token: a.token, body: {} })
    expect(last.status).toBe(429)
    expect(last.body.error).toBe('RATE_LIMITED')
  })

  test('an unauthenticated request refused before its handler (schema, JSON, a control character) still counts against the IP', async () => {
    const ip = '203.0.113.40'
    const refused = [
      await t.req('GET', '/v1/search?q=', { headers: fromIp(ip) }),
      await t.req('POST', '/v1/signup', { body: '{"email":', headers: fromIp(ip) }),
      await t.req('POST', '/v1/signup', { body: { email: 'not-an-email' }, headers: fromIp(ip) }),
      // A page: its refusal is a page for a browser, the JSON body for a client that asks for JSON.
      await t.req('GET', `/rotate?code=${'x'.repeat(101)}`, { headers: { ...fromIp(ip), accept: 'application/json' } }),
    ]
    expect(refused.map((r) => [r.status, r.body?.error])).toEqual([[400, 'BAD_REQUEST'], [400, 'BAD_REQUEST'], [400, 'BAD_REQUEST'], [429, 'RATE_LIMITED']])
    // Spent on refusals: a well-formed request from that IP waits like any other.
    expect((await t.req('GET', '/v1/search?q=echo', { headers: fromIp(ip) })).status).toBe(429)
    expect((await t.req('POST', '/v1/token/rotate', { body: { email: 'x\u0000@example.com' }, headers: { ...fromIp(ip) } })).status).toBe(429)
  })

  test('a killed agent hears AGENT_KILLED for a call the handler would refuse before its debit', async () => {
    t.clock.advance(120_000)
    const a = await t.signup(undefined)
    const ag = await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'gone' } })
    await t.req('POST', `/v1/agents/${ag.body.id}/kill`, { token: a.token })
    const r = await t.req('POST', '/v1/call/no.such.slug', { token: ag.body.token, body: {} })
    expect(r.body.error).toBe('AGENT_KILLED')
  })
})
