import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { checkRedisInvariant, redisBalance } from '../helpers/ledger'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

describe('referral', () => {
  test('unknown referred_by → BAD_REQUEST naming the field', async () => {
    const r = await t.req('POST', '/v1/signup', { body: { email: `x-${t.prefix}@example.com`, referred_by: 'ref_AAAAAAAAAAAA' } })
    expect(r.status).toBe(400)
    expect(r.body).toMatchObject({ error: 'BAD_REQUEST', field: 'referred_by' })
  })

  test('both sides get +500 on the first successful call, once', async () => {
    const referrer = await t.signup()
    const referred = await t.signup(undefined, { referred_by: referrer.public_ref })
    expect(referred.balance).toBe(500)
    const first = await t.req('POST', '/v1/call/test.echo', { token: referred.token, body: {} })
    expect(first.body.balance).toBe(995)
    await t.req('POST', '/v1/call/test.echo', { token: referred.token, body: {} })
    expect(await redisBalance(t, referred.account_id)).toBe(990)
    expect(await redisBalance(t, referrer.account_id)).toBe(1000)
    await checkRedisInvariant(t, referred.account_id)
    await checkRedisInvariant(t, referrer.account_id)
  })

  test('a refunded or 4xx first call does not earn the bonus', async () => {
    const referrer = await t.signup()
    const referred = await t.signup(undefined, { referred_by: referrer.public_ref })
    await t.req('POST', '/v1/call/test.fail', { token: referred.token, body: {} })
    await t.req('POST', '/v1/call/test.bad', { token: referred.token, body: {} })
    expect(await redisBalance(t, referrer.account_id)).toBe(500)
    expect(await redisBalance(t, referred.account_id)).toBe(495)
    await t.req('POST', '/v1/call/test.echo', { token: referred.token, body: {} })
    expect(await redisBalance(t, referrer.account_id)).toBe(1000)
  })

  test('concurrent first calls credit each side exactly once', async () => {
    const referrer = await t.signup()
    const referred = await t.signup(undefined, { referred_by: referrer.public_ref })
    const rs = await Promise.all(Array.from({ length: 40 }, () => t.req('POST', '/v1/call/test.cheap', { token: referred.token, body: {} })))
    expect(rs.every((r) => r.status === 200)).toBe(true)
    expect(await redisBalance(t, referred.account_id)).toBe(500 + 500 - 40)
    expect(await redisBalance(t, referrer.account_id)).toBe(1000)
    const entries = await checkRedisInvariant(t, referred.account_id)
    expect(entries.filter((e) => e.kind === 'referral')).toHaveLength(1)
  })

  test('a referred account lives in its referrer’s shard (one script credits both)', async () => {
    const referrer = await t.signup()
    const referred = await t.signup(undefined, { referred_by: referrer.public_ref })
    expect(t.s.ctx.keys.shardOf(referred.account_id)).toBe(t.s.ctx.keys.shardOf(referrer.account_id))
  })
})
