import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { hktDay } from '../../src/clock'
import { startTestApp, type TestApp } from '../helpers/harness'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

describe('signup → search → call', () => {
  test('signup grants 500 credits and a token shown once', async () => {
    const r = await t.req('POST', '/v1/signup', { body: { email: `Happy-${t.prefix}@Example.com`, origin: 'test' } })
    expect(r.status).toBe(201)
    expect(r.body.credits_granted).toBe(500)
    expect(r.body.balance).toBe(500)
    expect(r.body.token).toMatch(/^sk_[A-Za-z0-9_-]{43}$/)
    expect(r.body.public_ref).toMatch(/^ref_/)
    const bal = await t.req('GET', '/v1/balance', { token: r.body.token })
    expect(bal.status).toBe(200)
    expect(bal.body.balance).toBe(500)
    expect(bal.body.links.enable_auto_refill).toMatch(/^http:\/\/pab\.test\/mandate\?ref=mr_/)
  })

  test('search ranks slug matches first and shows lane, price, params', async () => {
    const r = await t.req('GET', '/v1/search?q=search')
    expect(r.status).toBe(200)
    expect(r.body.results[0].slug).toBe('test.search')
    expect(r.body.results[0]).toMatchObject({ lane: 'house', price: 5, status: 'live' })
    expect(r.body.results[0].params.required).toEqual(['q'])
  })

  test('a call debits the price, forwards the house key, returns the provider result', async () => {
    const a = await t.signup()
    const r = await t.req('POST', '/v1/call/test.echo', { token: a.token, body: { q: 'hello' } })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ slug: 'test.echo', charged: 5, balance: 495, provider_status: 200 })
    expect(r.body.result.echo).toEqual({ q: 'hello' })
    const seen = t.fake.seen.at(-1)!
    expect(seen.headers.authorization).toBe('Bearer house-secret-key')
    expect(JSON.stringify(seen)).not.toContain(a.token)
    const bal = await t.req('GET', '/v1/balance', { token: a.token })
    expect(bal.body).toMatchObject({ balance: 495, spent_today: 5 })
  })

  test('the free lane debits nothing and counts the request', async () => {
    const a = await t.signup()
    const r = await t.req('POST', '/v1/call/test.free', { token: a.token, body: {} })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ charged: 0, balance: 500 })
    const day = t.s.ctx.keys.unpricedRequestsToday(a.account_id, hktDay(t.clock.now()))
    expect(await t.s.ctx.redis.get(day)).toBe('1')
  })

  test('every windowed counter a call creates expires (no reset job, no key left forever)', async () => {
    const a = await t.signup()
    for (let i = 0; i < 3; i++) await t.req('POST', '/v1/call/test.cheap', { token: a.token, body: {} })
    await t.req('POST', '/v1/call/test.free', { token: a.token, body: {} })
    const k = t.s.ctx.keys
    const now = t.clock.now()
    const day = hktDay(now)
    for (const key of [k.spentToday(a.account_id, day), k.unpricedRequestsToday(a.account_id, day)]) {
      const ttl = await t.s.ctx.redis.ttl(key)
      expect(ttl).toBeGreaterThan(86400)
      expect(ttl).toBeLessThanOrEqual(2 * 86400)
    }
    const pttl = await t.s.ctx.redis.pttl(k.rateWindow(a.account_id, null, Math.floor(now / 60_000)))
    expect(pttl).toBeGreaterThan(0)
    expect(pttl).toBeLessThanOrEqual(120_000)
  })
})
