/**
 * An upstream that ignores `accept-encoding: identity` and compresses anyway cannot dodge the
 * response cap or the key masking: a compressed body is decoded, and the decoded bytes are what is
 * counted and masked (docs/decisions.md). An encoding we cannot decode is a provider error,
 * refunded. Both the proxy and the paid call's upstream, on a real listening server.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib'
import { startTestApp, type TestApp } from '../helpers/harness'
import { checkRedisInvariant, redisBalance } from '../helpers/ledger'
import { eventually } from '../helpers/proxy'

const CAP = 1024 * 1024
const HOUSE_KEY = 'house-secret-key'
let t: TestApp
let base: string
beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_PER_TOKEN: '100000', PROXY_MAX_RESPONSE_BYTES: String(CAP) } })
  base = await t.listen()
})
afterAll(async () => {
  await t.close()
})

const proxyPost = (token: string, init: RequestInit = {}) =>
  fetch(`${base}/proxy/fake/v1/chat`, { method: 'POST', body: '{}', ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } })
const call = (token: string) => t.req('POST', '/v1/call/test.echo', { token, body: { q: 'x' } })
const activity = (token: string) => eventually(() => t.req('GET', '/v1/activity', { token }), (r) => r.body.calls?.length === 1)

/** 10 MB of zeros, about 10 KB gzipped: far under the cap on the wire, far over it decoded. */
const BOMB = gzipSync(new Uint8Array(10 * 1024 * 1024))
const encoded = (body: Uint8Array, encoding: string, type = 'application/json') =>
  new Response(body, { headers: { 'content-encoding': encoding, 'content-type': type } })
/** The provider's error quoting the key it was sent, as some do. */
const keyEcho = (seen: { headers: Record<string, string> }) => JSON.stringify({ error: { message: `invalid key: ${seen.headers.authorization}` } })

describe('proxy', () => {
  test('a gzip bomb (10 MB of zeros in 10 KB) is counted decoded: cut at the cap, too_large, refunded', async () => {
    expect(BOMB.byteLength).toBeLessThan(CAP)
    const a = await t.signup()
    t.fake.handler = () => encoded(BOMB, 'gzip', 'text/plain')
    const r = await proxyPost(a.token)
    let received = 0
    let cut = r.status !== 200
    try {
      for await (const chunk of r.body!) received += chunk.byteLength
    } catch {
      cut = true
    }
    t.fake.handler = null
    expect(cut).toBe(true)
    expect(received).toBeLessThanOrEqual(CAP)
    expect((await activity(a.token)).body.calls[0]).toMatchObject({ slug: 'proxy:fake', outcome: 'too_large', refunded: true })
    expect(await eventually(() => redisBalance(t, a.account_id), (b) => b === 500)).toBe(500)
    await checkRedisInvariant(t, a.account_id)
  })

  for (const [encoding, pack] of [
    ['gzip', gzipSync],
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
    ['zstd', (b: Buffer) => Bun.zstdCompressSync(b)],
    ['deflate, gzip', (b: Buffer) => gzipSync(deflateSync(b))],
  ] as const)
    test(`a ${encoding} body echoing the injected key reaches the client decoded and masked`, async () => {
      const a = await t.signup()
      t.fake.handler = (_req, seen) => encoded(pack(Buffer.from(keyEcho(seen))), encoding)
      // The client's own decoding is off: what it gets must be plain, whatever it asked for.
      const r = await proxyPost(a.token, { decompress: false } as RequestInit)
      const text = await r.text()
      t.fake.handler = null
      expect(t.fake.seen.at(-1)!.headers['accept-encoding']).toBe('identity')
      expect(r.status).toBe(200)
      expect(r.headers.get('content-encoding')).toBeNull()
      expect(text).not.toContain(HOUSE_KEY)
      expect(JSON.parse(text)).toEqual({ error: { message: `invalid key: Bearer ${'*'.repeat(HOUSE_KEY.length)}` } })
      expect(await redisBalance(t, a.account_id)).toBe(497)
    })

  test('an encoding the proxy cannot decode → PROVIDER_ERROR, refunded; nothing of the body passes', async () => {
    const a = await t.signup()
    t.fake.handler = (_req, seen) => encoded(Buffer.from(keyEcho(seen)), 'x-secret-sauce')
    const r = await proxyPost(a.token)
    const text = await r.text()
    t.fake.handler = null
    expect(r.status).toBe(502)
    expect(JSON.parse(text)).toMatchObject({ error: 'PROVIDER_ERROR', refunded: true, balance: 500 })
    expect(text).not.toContain(HOUSE_KEY)
    expect(await redisBalance(t, a.account_id)).toBe(500)
  })

  test('a body that claims gzip but is not → PROVIDER_ERROR, refunded', async () => {
    const a = await t.signup()
    t.fake.handler = () => encoded(Buffer.from('this is not gzip at all'), 'gzip')
    const r = await proxyPost(a.token)
    t.fake.handler = null
    expect(r.status).toBe(502)
    expect(await r.json()).toMatchObject({ error: 'PROVIDER_ERROR', refunded: true, balance: 500 })
    expect(await redisBalance(t, a.account_id)).toBe(500)
  })
})

describe('paid call', () => {
  test('asks the provider for identity encoding', async () => {
    const a = await t.signup()
    expect((await call(a.token)).status).toBe(200)
    expect(t.fake.seen.at(-1)!.headers['accept-encoding']).toBe('identity')
  })

  test('a gzip bomb → RESPONSE_TOO_LARGE, refunded', async () => {
    const a = await t.signup()
    t.fake.handler = () => encoded(BOMB, 'gzip', 'text/plain')
    const r = await call(a.token)
    t.fake.handler = null
    expect(r.status).toBe(502)
    expect(r.body).toMatchObject({ error: 'RESPONSE_TOO_LARGE', refunded: true, cap: CAP, balance: 500 })
    expect(await redisBalance(t, a.account_id)).toBe(500)
  })

  test('a gzipped answer is decoded into the result', async () => {
    const a = await t.signup()
    t.fake.handler = () => encoded(gzipSync(Buffer.from(JSON.stringify({ answer: 42 }))), 'gzip')
    const r = await call(a.token)
    t.fake.handler = null
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ provider_status: 200, result: { answer: 42 } })
  })

  test('a gzipped answer echoing the key reaches the result decoded and masked', async () => {
    const a = await t.signup()
    t.fake.handler = (_req, seen) => encoded(gzipSync(Buffer.from(keyEcho(seen))), 'gzip')
    const r = await call(a.token)
    t.fake.handler = null
    expect(r.status).toBe(200)
    expect(r.text).not.toContain(HOUSE_KEY)
    expect(r.body.result).toEqual({ error: { message: `invalid key: Bearer ${'*'.repeat(HOUSE_KEY.length)}` } })
  })

  test('an encoding it cannot decode → PROVIDER_ERROR, refunded; the raw bytes never reach the result', async () => {
    const a = await t.signup()
    t.fake.handler = (_req, seen) => encoded(Buffer.from(keyEcho(seen)), 'x-secret-sauce')
    const r = await call(a.token)
    t.fake.handler = null
    expect(r.status).toBe(502)
    expect(r.body).toMatchObject({ error: 'PROVIDER_ERROR', refunded: true, balance: 500 })
    expect(r.text).not.toContain(HOUSE_KEY)
    expect(await redisBalance(t, a.account_id)).toBe(500)
  })
})
