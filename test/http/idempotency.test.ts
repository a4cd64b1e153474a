import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { checkRedisInvariant, redisBalance } from '../helpers/ledger'
import { eventually } from '../helpers/proxy'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

const call = (token: string, key: string, body: unknown, slug = 'test.echo') =>
  t.req('POST', `/v1/call/${slug}`, { token, body, headers: { 'idempotency-key': key } })

describe('Idempotency-Key', () => {
  test('a replay returns the first answer and charges once', async () => {
    const a = await t.signup()
    const first = await call(a.token, 'k1', { q: 'once' })
    const second = await call(a.token, 'k1', { q: 'once' })
    expect(first.status).toBe(200)
    expect(second.status).toBe(200)
    expect(second.body).toEqual(first.body)
    expect(await redisBalance(t, a.account_id)).toBe(495)
    expect(t.fake.seen.filter((s) => s.body === '{"q":"once"}')).toHaveLength(1)
  })

  test('the same key with a different body → CONFLICT, nothing charged', async () => {
    const a = await t.signup()
    await call(a.token, 'k2', { q: 'one' })
    const r = await call(a.token, 'k2', { q: 'two' })
    expect(r.status).toBe(409)
    expect(r.body.error).toBe('CONFLICT')
    expect(r.body.reason).toContain('different request')
    expect(await redisBalance(t, a.account_id)).toBe(495)
  })

  test('the same key on another slug is a different request → CONFLICT', async () => {
    const a = await t.signup()
    await call(a.token, 'k3', { q: 'x' })
    const r = await call(a.token, 'k3', { q: 'x' }, 'test.cheap')
    expect(r.status).toBe(409)
  })

  test('keys are per account: another account may use the same key', async () => {
    const a = await t.signup()
    const b = await t.signup()
    expect((await call(a.token, 'shared', { q: 'x' })).status).toBe(200)
    expect((await call(b.token, 'shared', { q: 'x' })).body.balance).toBe(495)
  })

  test('two in flight with one key → one runs, the other gets CONFLICT; charged once', async () => {
    const a = await t.signup()
    const rs = await Promise.all(Array.from({ length: 10 }, () => call(a.token, 'race', { q: 'race' })))
    const ok = rs.filter((r) => r.status === 200)
    const conflicts = rs.filter((r) => r.status === 409)
    expect(ok.length).toBeGreaterThanOrEqual(1)
    expect(ok.length + conflicts.length).toBe(10)
    // Every 200 is the same call (the first run or its replay).
    expect(new Set(ok.map((r) => r.body.call_id)).size).toBe(1)
    expect(await redisBalance(t, a.account_id)).toBe(495)
    await checkRedisInvariant(t, a.account_id)
  })

  test('a refunded call frees its key: the retry is charged once', async () => {
    const a = await t.signup()
    const failed = await call(a.token, 'k-fail', { q: 'x' }, 'test.fail')
    expect(failed.status).toBe(502)
    await Bun.sleep(20) // the release is filed just after the answer
    t.fake.handler = null
    const retry = await call(a.token, 'k-fail', { q: 'x' }, 'test.fail')
    expect(retry.status).toBe(502)
    expect(await redisBalance(t, a.account_id)).toBe(500)
    const entries = await checkRedisInvariant(t, a.account_id)
    expect(entries.map((e) => e.kind)).toEqual(['grant', 'debit', 'refund', 'debit', 'refund'])
  })

  test('a stored answer expires after 24 h (the key record has a TTL)', async () => {
    const a = await t.signup()
    await call(a.token, 'ttl', { q: 'x' })
    const ttl = await t.s.ctx.redis.ttl(t.s.ctx.keys.idempotency(a.account_id, null, 'ttl'))
    expect(ttl).toBeGreaterThan(86000)
    expect(ttl).toBeLessThanOrEqual(86400)
  })
  test('a client that goes away mid-call and retries with its key is charged once, and replayed the answer', async () => {
    // A real listener, so that the client's disconnect is a real one.
    const base = await t.listen()
    const a = await t.signup()
    const { promise: arrived, resolve: arrive } = Promise.withResolvers<void>()
    const { promise: answer, resolve: release } = Promise.withResolvers<Response>()
    t.fake.handler = () => {
      arrive()
      return answer
    }
    const send = (signal?: AbortSignal) =>
      fetch(`${base}/v1/call/test.echo`, {
        method: 'POST',
        body: '{"q":"gone"}',
        headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json', 'idempotency-key': 'k-gone' },
        signal,
      })
    const ac = new AbortController()
    const pending = send(ac.signal).catch(() => 'aborted')
    await arrived
    ac.abort()
    expect(await pending).toBe('aborted')
    await Bun.sleep(50) // the service sees the client gone
    release(Response.json({ answered: 'late' }))
    try {
      await eventually(() => t.req('GET', '/v1/activity', { token: a.token }), (x) => x.body.calls?.length === 1)
    } finally {
      t.fake.handler = null
    }
    // The retry of the same request with the same key: the first call's answer, charged once.
    const retry = await send()
    expect(retry.status).toBe(200)
    const body = (await retry.json()) as { call_id: string; charged: number; result: unknown }
    expect(body).toMatchObject({ charged: 5, result: { answered: 'late' } })
    const act = await t.req('GET', '/v1/activity', { token: a.token })
    expect(act.body.calls).toHaveLength(1)
    expect(act.body.calls[0]).toMatchObject({ call_id: body.call_id, outcome: 'ok' })
    expect(await redisBalance(t, a.account_id)).toBe(495)
    await checkRedisInvariant(t, a.account_id)
  })
})
