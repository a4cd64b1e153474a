/**
 * Every refusal of the proxy before forwarding (no upstream request, no debit), and every provider
 * failure after it (refunded, PROVIDER_ERROR), through the app's front door.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, testCatalog, type TestApp } from '../helpers/harness'
import { checkRedisInvariant, redisBalance } from '../helpers/ledger'
import { eventually } from '../helpers/proxy'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp({
    env: { RATE_LIMIT_PER_TOKEN: '100000', UNPRICED_DAILY_REQUEST_CAP: '2' },
    catalog: (fakeUrl) => {
      const c = testCatalog(fakeUrl)
      // Each route's paths are opened on the house key explicitly (the house lane is closed by default).
      const p = (extra: Record<string, unknown>) => ({ base_url: fakeUrl, key_env: 'FAKE_HOUSE_KEY', auth: { header: 'authorization', scheme: 'Bearer' }, ...extra })
      return {
        ...c,
        providers: {
          ...c.providers,
          pricey: p({ proxy: { price: 600, paths: ['/v1/'], house: { allow: ['/v1/'] } } }),
          free: p({ proxy: { price: 0, paths: ['/v1/'], house: { allow: ['/v1/'] } } }),
          nohouse: p({ key_env: 'NEVER_SET_IN_TESTS', proxy: { price: 1, paths: ['/v1/'], house: { allow: ['/v1/'] } } }),
          // Port 1 on loopback: nothing listens, the connection is refused.
          dead: p({ base_url: 'http://127.0.0.1:1', proxy: { price: 3, paths: ['/v1/'], house: { allow: ['/v1/'] } } }),
        },
      }
    },
  })
})
afterAll(async () => {
  await t.close()
})

const proxy = (token: string | undefined, provider: string, path = '/v1/chat', headers: Record<string, string> = {}) =>
  t.req('POST', `/proxy/${provider}${path}`, { token, body: { q: 1 }, headers })

/** Runs `fn` and asserts the fake received nothing meanwhile. */
async function noUpstream<T>(fn: () => Promise<T>): Promise<T> {
  const before = t.fake.seen.length
  const r = await fn()
  expect(t.fake.seen.length).toBe(before)
  return r
}

describe('refused before forwarding: nothing reaches the provider, nothing is debited', () => {
  test('no token, a malformed one or an unknown one → UNAUTHORIZED', async () => {
    for (const headers of [{}, { authorization: 'Bearer nope' }, { 'x-api-key': 'sk_' + 'A'.repeat(43) }] as Record<string, string>[]) {
      const r = await noUpstream(() => proxy(undefined, 'fake', '/v1/chat', headers))
      expect(r.status).toBe(401)
      expect(r.body.error).toBe('UNAUTHORIZED')
    }
  })

  test('a byok provider without a vaulted key → VAULT_KEY_MISSING with the link route', async () => {
    const a = await t.signup()
    const r = await noUpstream(() => proxy(a.token, 'fakebyok'))
    expect(r.status).toBe(409)
    expect(r.body).toMatchObject({ error: 'VAULT_KEY_MISSING', provider: 'fakebyok', link_via: 'POST /v1/keys/link' })
    expect(await redisBalance(t, a.account_id)).toBe(500)
  })

  test('a provider with no house key and no vaulted key → API_UNAVAILABLE', async () => {
    const a = await t.signup()
    const r = await noUpstream(() => proxy(a.token, 'nohouse'))
    expect(r.status).toBe(503)
    expect(r.body).toMatchObject({ error: 'API_UNAVAILABLE', slug: 'proxy:nohouse' })
  })

  test('a price above the balance → PAYMENT_REQUIRED with the instructions', async () => {
    const a = await t.signup()
    const r = await noUpstream(() => proxy(a.token, 'pricey'))
    expect(r.status).toBe(402)
    expect(r.body).toMatchObject({ error: 'PAYMENT_REQUIRED', balance: 500, price: 600, reason: 'insufficient_balance' })
    expect(r.body.human_readable).toContain('600 credits')
    expect(await redisBalance(t, a.account_id)).toBe(500)
  })

  test('an agent whose allowlist lacks proxy:<provider> → POLICY_DENIED; with the pattern it passes', async () => {
    const a = await t.signup()
    const denied = (await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'no-proxy', allowlist: ['test.*'] } })).body
    const r = await noUpstream(() => proxy(denied.token, 'fake'))
    expect(r.status).toBe(403)
    expect(r.body).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_allowlist' })
    const allowed = (await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'proxy-ok', allowlist: ['proxy:fake'] } })).body
    t.fake.handler = () => Response.json({ ok: true })
    const ok = await proxy(allowed.token, 'fake')
    t.fake.handler = null
    expect(ok.status).toBe(200)
    expect(ok.body).toEqual({ ok: true })
    expect(await redisBalance(t, a.account_id)).toBe(497)
  })

  test('a killed agent → AGENT_KILLED', async () => {
    const a = await t.signup()
    const ag = (await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'doomed' } })).body
    expect((await t.req('POST', `/v1/agents/${ag.id}/kill`, { token: a.token })).status).toBe(200)
    const r = await noUpstream(() => proxy(ag.token, 'fake'))
    expect(r.status).toBe(403)
    expect(r.body.error).toBe('AGENT_KILLED')
  })

  test('an unpriced route counts against the daily request cap → REQUEST_CAP_REACHED', async () => {
    const a = await t.signup()
    t.fake.handler = () => Response.json({ ok: true })
    expect((await proxy(a.token, 'free')).status).toBe(200)
    expect((await proxy(a.token, 'free')).status).toBe(200)
    const r = await noUpstream(() => proxy(a.token, 'free'))
    t.fake.handler = null
    expect(r.status).toBe(429)
    expect(r.body).toMatchObject({ error: 'REQUEST_CAP_REACHED', cap: 2, used: 2 })
    expect(await redisBalance(t, a.account_id)).toBe(500)
  })
})

describe('provider failures after forwarding are refunded', () => {
  test('upstream 5xx → PROVIDER_ERROR with the provider status, debit refunded', async () => {
    const a = await t.signup()
    t.fake.handler = () => Response.json({ error: 'boom' }, { status: 503 })
    const r = await proxy(a.token, 'fake')
    t.fake.handler = null
    expect(r.status).toBe(502)
    expect(r.body).toMatchObject({ error: 'PROVIDER_ERROR', refunded: true, provider_status: 503, balance: 500 })
    expect(r.body.call_id).toMatch(/^call_/)
    expect(await redisBalance(t, a.account_id)).toBe(500)
    await checkRedisInvariant(t, a.account_id)
    const act = await eventually(() => t.req('GET', '/v1/activity', { token: a.token }), (x) => x.body.calls?.length === 1)
    expect(act.body.calls[0]).toMatchObject({ slug: 'proxy:fake', refunded: true, outcome: 'provider_error', http_status: 503 })
  })

  test('connection refused → PROVIDER_ERROR (no provider status), debit refunded', async () => {
    const a = await t.signup()
    const r = await proxy(a.token, 'dead')
    expect(r.status).toBe(502)
    expect(r.body).toMatchObject({ error: 'PROVIDER_ERROR', refunded: true, provider_status: null })
    expect(await redisBalance(t, a.account_id)).toBe(500)
    await checkRedisInvariant(t, a.account_id)
  })

  test('a redirect is neither followed nor handed on: PROVIDER_ERROR, refunded', async () => {
    const a = await t.signup()
    t.fake.handler = () => new Response(null, { status: 302, headers: { location: 'http://evil.example/steal' } })
    const before = t.fake.seen.length
    const r = await proxy(a.token, 'fake')
    t.fake.handler = null
    expect(t.fake.seen.length).toBe(before + 1)
    expect(r.status).toBe(502)
    expect(r.body).toMatchObject({ error: 'PROVIDER_ERROR', provider_status: 302, refunded: true })
    expect(r.headers.get('location')).toBeNull()
    expect(await redisBalance(t, a.account_id)).toBe(500)
  })

  test('a provider 4xx is the caller’s: passed through as sent, and charged', async () => {
    const a = await t.signup()
    t.fake.handler = () => Response.json({ error: { message: 'bad model', type: 'invalid_request_error' } }, { status: 400 })
    const r = await proxy(a.token, 'fake')
    t.fake.handler = null
    expect(r.status).toBe(400)
    expect(r.body).toEqual({ error: { message: 'bad model', type: 'invalid_request_error' } })
    expect(await redisBalance(t, a.account_id)).toBe(497)
    const act = await eventually(() => t.req('GET', '/v1/activity', { token: a.token }), (x) => x.body.calls?.length === 1)
    expect(act.body.calls[0]).toMatchObject({ refunded: false, outcome: 'provider_4xx', http_status: 400, charged: 3 })
  })
})
