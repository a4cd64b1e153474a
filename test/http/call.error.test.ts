import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { checkRedisInvariant, redisBalance } from '../helpers/ledger'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_PER_TOKEN: '100000' } })
})
afterAll(async () => {
  await t.close()
})

const call = (token: string | undefined, slug: string, body: unknown = { q: 'x' }, headers: Record<string, string> = {}) =>
  t.req('POST', `/v1/call/${slug}`, { token, body, headers })

describe('authentication', () => {
  test('missing, malformed and unknown bearers answer UNAUTHORIZED with the remedy', async () => {
    for (const token of [undefined, 'nope', 'sk_' + 'A'.repeat(43)]) {
      const r = await call(token, 'test.echo')
      expect(r.status).toBe(401)
      expect(r.body.error).toBe('UNAUTHORIZED')
      expect(r.body.message).toContain('POST /v1/signup')
    }
  })
})

describe('catalog errors lose nothing', () => {
  test('UNKNOWN_API names the slug and the search route', async () => {
    const a = await t.signup()
    const r = await call(a.token, 'no.such')
    expect(r.status).toBe(404)
    expect(r.body).toMatchObject({ error: 'UNKNOWN_API', slug: 'no.such' })
    expect(r.body.search_url).toStartWith('/v1/search?q=')
    expect(await redisBalance(t, a.account_id)).toBe(500)
  })

  test('API_UNAVAILABLE when the house key is not configured', async () => {
    const a = await t.signup()
    const r = await call(a.token, 'test.nokey')
    expect(r.status).toBe(503)
    expect(r.body.error).toBe('API_UNAVAILABLE')
    expect(t.fake.seen.filter((s) => s.headers.authorization === 'Bearer undefined')).toHaveLength(0)
    expect(await redisBalance(t, a.account_id)).toBe(500)
  })

  test('API_PAUSED while the founder pauses a capability, live again after resume', async () => {
    const a = await t.signup()
    await t.s.pauses.pause('test.cheap')
    const r = await call(a.token, 'test.cheap')
    expect(r.status).toBe(503)
    expect(r.body).toMatchObject({ error: 'API_PAUSED', slug: 'test.cheap' })
    expect((await t.req('GET', '/status')).body.paused).toContain('test.cheap')
    await t.s.pauses.resume('test.cheap')
    expect((await call(a.token, 'test.cheap')).status).toBe(200)
  })

  test('BYOK_REQUIRED for a byok capability without a vaulted key', async () => {
    const a = await t.signup()
    const r = await call(a.token, 'test.byok')
    expect(r.status).toBe(402)
    expect(r.body).toMatchObject({ error: 'BYOK_REQUIRED', provider: 'fakebyok', link_via: 'POST /v1/keys/link' })
    expect(await redisBalance(t, a.account_id)).toBe(500)
  })
})

describe('bad input gets a structured error and loses nothing', () => {
  test('body that is not JSON', async () => {
    const a = await t.signup()
    const r = await call(a.token, 'test.echo', '{nope')
    expect(r.status).toBe(400)
    expect(r.body).toMatchObject({ error: 'BAD_REQUEST', field: 'body' })
  })

  test('params that fail the capability schema name the field and the expected shape', async () => {
    const a = await t.signup()
    const missing = await call(a.token, 'test.search', {})
    expect(missing.status).toBe(400)
    expect(missing.body).toMatchObject({ error: 'BAD_REQUEST', field: 'q', expected: 'present' })
    const wrong = await call(a.token, 'test.search', { q: 42 })
    expect(wrong.body).toMatchObject({ error: 'BAD_REQUEST', field: 'q' })
    expect(wrong.body.expected).toContain('string')
    expect(await redisBalance(t, a.account_id)).toBe(500)
    expect((await t.req('GET', '/v1/activity', { token: a.token })).body.calls).toHaveLength(0)
  })

  test('params nested deeper than 512 levels answer BAD_REQUEST naming the field and the limit, not INTERNAL', async () => {
    const a = await t.signup()
    const deep = (n: number) => '['.repeat(n) + ']'.repeat(n)
    // 200k levels in a 400 KB body: JSON.parse takes them, a recursive walk over them (or JSON.stringify) would overflow the stack.
    const r = await call(a.token, 'test.echo', `{"x":${deep(200_000)}}`)
    expect(r.status).toBe(400)
    expect(r.body).toMatchObject({ error: 'BAD_REQUEST', field: 'x' })
    expect(r.body.expected).toContain('512')
    expect(await redisBalance(t, a.account_id)).toBe(500)
    // At the limit: the body object and 511 arrays are 512 levels.
    expect((await call(a.token, 'test.echo', `{"x":${deep(511)}}`)).status).toBe(200)
    expect((await call(a.token, 'test.echo', `{"x":${deep(512)}}`)).status).toBe(400)
  })

  test('a body over MAX_BODY_BYTES answers BAD_REQUEST with status 413', async () => {
    const a = await t.signup()
    const r = await call(a.token, 'test.echo', { q: 'x'.repeat(1_100_000) })
    expect(r.status).toBe(413)
    expect(r.body).toMatchObject({ error: 'BAD_REQUEST', field: 'body' })
    expect(await redisBalance(t, a.account_id)).toBe(500)
  })

  test('a malformed Idempotency-Key is refused before any debit', async () => {
    const a = await t.signup()
    const r = await call(a.token, 'test.echo', { q: 'x' }, { 'idempotency-key': 'x'.repeat(300) })
    expect(r.body).toMatchObject({ error: 'BAD_REQUEST', field: 'Idempotency-Key' })
    expect(await redisBalance(t, a.account_id)).toBe(500)
  })
})

describe('provider failures are refunded exactly once', () => {
  for (const [slug, providerStatus] of [
    ['test.fail', 500],
    ['test.unavailable503', 503],
    ['test.hang', null],
    ['test.reset', null],
    ['test.refused', null],
  ] as const) {
    test(`${slug} → PROVIDER_ERROR, refunded`, async () => {
      const a = await t.signup()
      const r = await call(a.token, slug)
      expect(r.status).toBe(502)
      expect(r.body).toMatchObject({ error: 'PROVIDER_ERROR', refunded: true, provider_status: providerStatus })
      expect(r.body.call_id).toStartWith('call_')
      expect(await redisBalance(t, a.account_id)).toBe(500)
      const entries = await checkRedisInvariant(t, a.account_id)
      expect(entries.map((e) => e.kind)).toEqual(['grant', 'debit', 'refund'])
      const bal = await t.req('GET', '/v1/balance', { token: a.token })
      expect(bal.body.spent_today).toBe(0)
    })
  }

  test('a repeated refund of the same call applies once', async () => {
    const a = await t.signup()
    const r = await call(a.token, 'test.fail')
    const { refund } = await import('../../src/paid-request/refund')
    const again = await refund(t.s.ctx, { accountId: a.account_id, agentId: null, callId: r.body.call_id, day: 0, reason: 'retry' })
    expect(again.applied).toBe(false)
    expect(await redisBalance(t, a.account_id)).toBe(500)
    await checkRedisInvariant(t, a.account_id)
  })

  test('a call that kept its charge can never be refunded later', async () => {
    const a = await t.signup()
    const ok = await call(a.token, 'test.echo')
    const bad = await call(a.token, 'test.bad')
    await Bun.sleep(20) // the record that settles the call is filed just after the answer
    const { refund } = await import('../../src/paid-request/refund')
    for (const r of [ok, bad]) {
      const late = await refund(t.s.ctx, { accountId: a.account_id, agentId: null, callId: r.body.call_id, day: 0, reason: 'late' })
      expect(late.applied).toBe(false)
    }
    expect(await redisBalance(t, a.account_id)).toBe(490)
  })

  test('a provider 4xx is the caller’s fault: charged and passed through', async () => {
    const a = await t.signup()
    const r = await call(a.token, 'test.bad')
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ charged: 5, balance: 495, provider_status: 400 })
    expect(r.body.result).toEqual({ error: 'status 400' })
  })

  for (const slug of ['test.big', 'test.chunked']) {
    test(`${slug}: a response over the cap → RESPONSE_TOO_LARGE, refunded`, async () => {
      const a = await t.signup()
      const r = await call(a.token, slug)
      expect(r.status).toBe(502)
      expect(r.body).toMatchObject({ error: 'RESPONSE_TOO_LARGE', refunded: true, cap: 2097152 })
      expect(await redisBalance(t, a.account_id)).toBe(500)
    })
  }
})

describe('PAYMENT_REQUIRED', () => {
  test('carries every context field and loses nothing', async () => {
    const a = await t.signup()
    const r = await call(a.token, 'test.pricey')
    expect(await redisBalance(t, a.account_id)).toBe(200)
    const again = await call(a.token, 'test.pricey')
    expect(again.status).toBe(402)
    expect(again.body).toMatchObject({ error: 'PAYMENT_REQUIRED', balance: 200, price: 300, reason: 'insufficient_balance' })
    expect(again.body.enable_url).toMatch(/^http:\/\/pab\.test\/mandate\?ref=mr_/)
    expect(again.body.topup_url).toBe('http://pab.test/v1/topup')
    expect(again.body.human_readable).toContain(again.body.enable_url)
    expect(r.status).toBe(200)
    expect(await redisBalance(t, a.account_id)).toBe(200)
    await checkRedisInvariant(t, a.account_id)
  })
})
