/**
 * The flat paid call under a demanding user (audit of the call path): upstream failures of every
 * shape, odd params, and Idempotency-Key reuse, each checked at the HTTP edge and in the ledger.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, testCatalog, type TestApp } from '../helpers/harness'
import { holdKeyRead } from '../helpers/key-read-hold'
import { checkRedisInvariant, redisBalance } from '../helpers/ledger'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp({
    catalog: (url) => {
      const c = testCatalog(url)
      const base = c.capabilities.find((x) => x.slug === 'test.echo')!
      c.capabilities.push(
        { ...base, slug: 'test.drip', path: '/drip', timeout_ms: 300 },
        { ...base, slug: 'test.script', path: '/script' },
        { ...base, slug: 'test.get', path: '/echo', method: 'GET' },
      )
      return c
    },
  })
})
afterAll(async () => {
  await t.close()
})

const call = (token: string, slug: string, body: unknown = { q: 'x' }, headers: Record<string, string> = {}) =>
  t.req('POST', `/v1/call/${slug}`, { token, body, headers })

describe('upstream failures', () => {
  test('a body that drips in past the timeout → PROVIDER_ERROR, refunded (the timeout covers the body)', async () => {
    const a = await t.signup()
    t.fake.handler = (req) => {
      let n = 0
      return new Response(
        new ReadableStream({
          async pull(c) {
            // 20 bytes, one every 100 ms: the whole body takes 2 s, the capability's timeout is 300 ms.
            if (n++ >= 20) return c.close()
            await Bun.sleep(100)
            c.enqueue(new TextEncoder().encode(' '))
          },
        }),
        { headers: { 'content-type': 'application/json' } },
      )
    }
    try {
      const r = await call(a.token, 'test.drip')
      expect(r.status).toBe(502)
      expect(r.body).toMatchObject({ error: 'PROVIDER_ERROR', refunded: true })
      expect(await redisBalance(t, a.account_id)).toBe(500)
    } finally {
      t.fake.handler = null
    }
  })

  test('a 302 with Location → PROVIDER_ERROR, refunded', async () => {
    const a = await t.signup()
    t.fake.handler = () => new Response(null, { status: 302, headers: { location: 'http://evil.example/' } })
    try {
      const r = await call(a.token, 'test.script')
      expect(r.status).toBe(502)
      expect(r.body).toMatchObject({ error: 'PROVIDER_ERROR', refunded: true, provider_status: 302 })
      expect(await redisBalance(t, a.account_id)).toBe(500)
    } finally {
      t.fake.handler = null
    }
  })
})

describe('params that are not an object', () => {
  for (const body of ['null', '[]', '"x"', '1', 'true', '[{"q":"x"}]']) {
    test(`${body} → BAD_REQUEST, nothing charged`, async () => {
      const a = await t.signup()
      const r = await call(a.token, 'test.echo', body)
      expect(r.status).toBe(400)
      expect(r.body.error).toBe('BAD_REQUEST')
      expect(await redisBalance(t, a.account_id)).toBe(500)
    })
  }
  test('GET capability with nested and null params', async () => {
    const a = await t.signup()
    const r = await call(a.token, 'test.get', '{"q":"x","n":null,"o":{"a":1},"big":12345678901234567890}')
    expect(r.status).toBe(200)
    expect(await redisBalance(t, a.account_id)).toBe(495)
  })
})

describe('Idempotency-Key reuse', () => {
  test('after a refund, the key may carry another body: a fresh call', async () => {
    const a = await t.signup()
    const failed = await call(a.token, 'test.fail', { q: 'one' }, { 'idempotency-key': 'reuse' })
    expect(failed.status).toBe(502)
    const again = await call(a.token, 'test.echo', { q: 'two' }, { 'idempotency-key': 'reuse' })
    expect(again.status).toBe(200)
    expect(await redisBalance(t, a.account_id)).toBe(495)
  })

  test('a charged 4xx is replayed, not charged again', async () => {
    const a = await t.signup()
    const first = await call(a.token, 'test.bad', { q: 'x' }, { 'idempotency-key': 'k4xx' })
    const second = await call(a.token, 'test.bad', { q: 'x' }, { 'idempotency-key': 'k4xx' })
    expect(second.body).toEqual(first.body)
    expect(await redisBalance(t, a.account_id)).toBe(495)
    await checkRedisInvariant(t, a.account_id)
  })
})

describe('a client that goes away before the provider is asked', () => {
  test('is not charged for a request the provider never received', async () => {
    const base = await t.listen()
    const a = await t.signup()
    // The vault read comes after the debit and before the upstream request: hold it there until
    // the client has gone.
    const { reached, release, restore } = holdKeyRead(t)
    const seenBefore = t.fake.seen.length
    try {
      const ac = new AbortController()
      const pending = fetch(`${base}/v1/call/test.byok`, {
        method: 'POST',
        body: '{"q":"never sent"}',
        headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
        signal: ac.signal,
      }).catch(() => 'aborted')
      await reached
      expect(await redisBalance(t, a.account_id)).toBe(499)
      ac.abort()
      expect(await pending).toBe('aborted')
      await Bun.sleep(50) // the service sees the client gone
      release()
      const { eventually } = await import('../helpers/proxy')
      const act = await eventually(() => t.req('GET', '/v1/activity', { token: a.token }), (x) => x.body.calls?.length === 1)
      // The provider was never asked, so nothing was bought: the debit comes back.
      expect(t.fake.seen.slice(seenBefore).filter((s) => s.body === '{"q":"never sent"}')).toHaveLength(0)
      expect(act.body.calls[0]).toMatchObject({ refunded: true })
      expect(await redisBalance(t, a.account_id)).toBe(500)
      await checkRedisInvariant(t, a.account_id)
    } finally {
      restore()
    }
  })
})

describe('an Idempotency-Key replay returns the first answer, whatever the capability is doing now', () => {
  test('the capability paused after the first call: the retry gets its stored answer, not API_PAUSED', async () => {
    const a = await t.signup()
    const first = await call(a.token, 'test.cheap', { q: 'paused later' }, { 'idempotency-key': 'k-pause' })
    expect(first.status).toBe(200)
    // A spend alarm (or the founder) pauses the capability before the client, which lost the
    // answer, retries: told API_PAUSED ("try another slug"), it would buy the call a second time.
    await t.s.pauses.pause('test.cheap')
    try {
      const retry = await call(a.token, 'test.cheap', { q: 'paused later' }, { 'idempotency-key': 'k-pause' })
      expect(retry.status).toBe(200)
      expect(retry.body).toEqual(first.body)
      // A new call (another key, or none) is still refused while paused, and nothing is charged.
      expect((await call(a.token, 'test.cheap', { q: 'paused later' }, { 'idempotency-key': 'k-pause-2' })).body.error).toBe('API_PAUSED')
      expect((await call(a.token, 'test.cheap', { q: 'paused later' })).body.error).toBe('API_PAUSED')
      expect(await redisBalance(t, a.account_id)).toBe(499)
      await checkRedisInvariant(t, a.account_id)
    } finally {
      await t.s.pauses.resume('test.cheap')
    }
  })
})

test('a killed agent retrying its key on a paused capability hears AGENT_KILLED, not its stored answer', async () => {
  const owner = await t.signup()
  const agent = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'replayer' } })).body
  const first = await call(agent.token, 'test.cheap', { q: 'k' }, { 'idempotency-key': 'k-killed' })
  expect(first.status).toBe(200)
  expect((await t.req('POST', `/v1/agents/${agent.id}/kill`, { token: owner.token })).status).toBe(200)
  await t.s.pauses.pause('test.cheap')
  try {
    const retry = await call(agent.token, 'test.cheap', { q: 'k' }, { 'idempotency-key': 'k-killed' })
    expect(retry.status).toBe(403)
    expect(retry.body.error).toBe('AGENT_KILLED')
  } finally {
    await t.s.pauses.resume('test.cheap')
  }
})
