import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

describe('signup', () => {
  test('the same e-mail (any case) twice → EMAIL_EXISTS with the rotate remedy', async () => {
    const email = `dup-${t.prefix}@example.com`
    expect((await t.req('POST', '/v1/signup', { body: { email } })).status).toBe(201)
    const r = await t.req('POST', '/v1/signup', { body: { email: email.toUpperCase() } })
    expect(r.status).toBe(409)
    expect(r.body.error).toBe('EMAIL_EXISTS')
    expect(r.body.message).toContain('POST /v1/token/rotate')
  })

  test('concurrent signups with one e-mail: exactly one account', async () => {
    const email = `race-${t.prefix}@example.com`
    const rs = await Promise.all(Array.from({ length: 20 }, () => t.req('POST', '/v1/signup', { body: { email } })))
    expect(rs.filter((r) => r.status === 201)).toHaveLength(1)
    expect(rs.filter((r) => r.status === 409)).toHaveLength(19)
  })

  for (const [body, field] of [
    [{}, 'email'],
    [{ email: 'not-an-email' }, 'email'],
    [{ email: 'a@b.co', origin: 'x'.repeat(201) }, 'origin'],
  ] as const) {
    test(`bad signup ${JSON.stringify(body).slice(0, 40)} → BAD_REQUEST naming ${field}`, async () => {
      const r = await t.req('POST', '/v1/signup', { body })
      expect(r.status).toBe(400)
      expect(r.body.error).toBe('BAD_REQUEST')
      expect(r.body.field).toContain(field)
      expect(typeof r.body.expected).toBe('string')
    })
  }

  test('only the SHA-256 of a token is stored', async () => {
    const a = await t.signup()
    const raw = JSON.stringify(await t.s.ctx.redis.hgetall(t.s.ctx.keys.account(a.account_id)))
    expect(raw).not.toContain(a.token)
    await flushAll(t)
    const rows = await t.s.db.db.execute(`select * from accounts where id = '${a.account_id}'` as never)
    expect(JSON.stringify(rows)).not.toContain(a.token)
  })

  test('token rotation: the new token works, the old one is refused at once', async () => {
    const a = await t.signup()
    const r = await t.req('POST', '/v1/token/rotate', { token: a.token })
    expect(r.status).toBe(200)
    expect(r.body.token).toMatch(/^sk_/)
    expect((await t.req('GET', '/v1/balance', { token: a.token })).status).toBe(401)
    expect((await t.req('POST', '/v1/call/test.echo', { token: a.token, body: {} })).status).toBe(401)
    expect((await t.req('GET', '/v1/balance', { token: r.body.token })).body.balance).toBe(500)
  })
})

describe('activity', () => {
  test('pages newest first through Redis and Postgres, metadata only, no duplicates', async () => {
    const a = await t.signup()
    for (let i = 0; i < 7; i++) {
      t.clock.advance(1000)
      await t.req('POST', `/v1/call/${i % 3 === 0 ? 'test.fail' : 'test.cheap'}`, { token: a.token, body: { secret: 'payload-never-logged' } })
    }
    await Bun.sleep(20)
    await flushAll(t)
    // Older calls are only in Postgres once Redis' recent list is gone.
    await t.s.ctx.redis.ltrim(t.s.ctx.keys.recentCalls(a.account_id), 0, 2)
    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const q: string = `/v1/activity?limit=2${cursor ? `&cursor=${cursor}` : ''}`
      const r = await t.req('GET', q, { token: a.token })
      expect(r.status).toBe(200)
      expect(r.text).not.toContain('payload-never-logged')
      for (const c of r.body.calls) seen.push(c.call_id)
      cursor = r.body.next_cursor
      pages++
    } while (cursor && pages < 10)
    expect(seen).toHaveLength(7)
    expect(new Set(seen).size).toBe(7)
    const all = (await t.req('GET', '/v1/activity?limit=200', { token: a.token })).body
    expect(all.calls.map((c: { call_id: string }) => c.call_id)).toEqual(seen)
    expect(all.calls[0]).toMatchObject({ slug: 'test.fail', refunded: true, charged: 0, reserved: 5, outcome: 'provider_error', http_status: 500 })
    expect(all.calls[1]).toMatchObject({ slug: 'test.cheap', refunded: false, charged: 1, outcome: 'ok', agent_id: null })
    expect(all.balance).toBe(496)
  })

  test('limit out of range and a forged cursor → BAD_REQUEST', async () => {
    const a = await t.signup()
    expect((await t.req('GET', '/v1/activity?limit=201', { token: a.token })).body).toMatchObject({ error: 'BAD_REQUEST', field: 'limit' })
    expect((await t.req('GET', '/v1/activity?cursor=zzz', { token: a.token })).body).toMatchObject({ error: 'BAD_REQUEST', field: 'cursor' })
  })
})

describe('public surfaces', () => {
  test('/status reports Redis, Postgres and the ledger lag', async () => {
    const r = await t.req('GET', '/status')
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ status: 'ok', version: '2.0.0', redis: 'ok', postgres: 'ok', signups: 'open' })
    expect(typeof r.body.ledger_lag.entries).toBe('number')
    expect(r.body.unavailable).toContain('test.nokey')
  })

  test('/v1/public-stats counts organic calls and the credits they kept', async () => {
    const before = (await t.req('GET', '/v1/public-stats')).body
    const a = await t.signup()
    await t.req('POST', '/v1/call/test.echo', { token: a.token, body: {} })
    await t.req('POST', '/v1/call/test.fail', { token: a.token, body: {} })
    await Bun.sleep(20)
    const after = (await t.req('GET', '/v1/public-stats')).body
    expect(after.organic_calls_routed - before.organic_calls_routed).toBe(1)
    expect(after.credits_honored - before.credits_honored).toBe(5)
  })

  test('/capabilities lists live, paused and unavailable', async () => {
    const r = await t.req('GET', '/capabilities')
    expect(r.body.live).toContain('test.echo')
    expect(r.body.unavailable).toEqual(['test.nokey'])
  })

  test('/errors.md lists every code of the registry with its status', async () => {
    const r = await t.req('GET', '/errors.md')
    expect(r.headers.get('content-type')).toContain('text/markdown')
    const { ERRORS } = await import('../../src/errors')
    for (const [code, spec] of Object.entries(ERRORS)) expect(r.text).toContain(`| \`${code}\` | ${spec.status} |`)
  })

  test('/openapi.json documents every route with its schemas', async () => {
    const r = await t.req('GET', '/openapi.json')
    expect(r.body.openapi).toStartWith('3.')
    for (const p of ['/v1/signup', '/v1/search', '/v1/call/{slug}', '/v1/balance', '/v1/activity', '/status', '/v1/public-stats'])
      expect(Object.keys(r.body.paths)).toContain(p)
    expect(r.body.paths['/v1/signup'].post.requestBody.content['application/json'].schema.required).toContain('email')
    expect(r.body.paths['/v1/balance'].get.security).toEqual([{ bearer: [] }])
    expect(r.body.components.schemas.Error.properties.error.enum).toContain('PAYMENT_REQUIRED')
  })

  test('an unknown route → NOT_FOUND in the error shape', async () => {
    const r = await t.req('GET', '/v1/nope')
    expect(r.status).toBe(404)
    expect(r.body.error).toBe('NOT_FOUND')
  })
})
