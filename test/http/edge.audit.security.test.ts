/**
 * The request edge as an attacker or a demanding client meets it (audit of the edge and public
 * surfaces): the client address behind a trusted proxy on the production listener, IPv6 callers,
 * Retry-After that a client can trust, JSON nested deep in a field the schema types, concurrent
 * signups of one e-mail.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { listen, type Listener } from '../../src/listen'
import { trustedProxies } from '../../src/edge/client-ip'
import { ConfigError, parseConfig } from '../../src/config'

let t: TestApp
let listener: Listener
beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_PER_IP: '3', RATE_LIMIT_PER_TOKEN: '6', TRUSTED_PROXIES: '127.0.0.1' } })
  // As src/index.ts listens: no hostname (Bun takes IPv4 clients on a dual-stack socket).
  listener = await listen(t.app, { port: 0, maxBodyBytes: t.s.cfg.MAX_BODY_BYTES })
  t.clock.set(Math.ceil(Date.now() / 60_000) * 60_000 + 1_000)
})
afterAll(async () => {
  await listener.stop(true)
  await t.close()
})

const fromIp = (ip: string) => ({ 'x-forwarded-for': ip })
/** A fresh minute, so one test's counts do not reach the next. */
const freshMinute = () => t.clock.advance(180_000)

describe('the client address', () => {
  test('behind a trusted proxy on the production listener, each client has its own per-IP budget', async () => {
    freshMinute()
    const search = (ip: string) => fetch(`${listener.url}/v1/search?q=echo`, { headers: fromIp(ip) }).then((r) => r.status)
    const a: number[] = []
    for (let i = 0; i < 4; i++) a.push(await search('198.51.100.21'))
    expect(a).toEqual([200, 200, 200, 429])
    // Another client behind the same proxy is not spent by the first one.
    expect(await search('198.51.100.22')).toBe(200)
  })

  test('an IPv6 client cannot escape the per-IP limit by changing addresses within its /64', async () => {
    freshMinute()
    const rs: number[] = []
    for (let i = 1; i <= 5; i++) rs.push((await t.req('GET', '/v1/search?q=echo', { headers: fromIp(`2001:db8:7:9::${i.toString(16)}`) })).status)
    expect(rs).toEqual([200, 200, 200, 429, 429])
    // The same client written as an IPv4-mapped address is the same client.
    freshMinute()
    for (let i = 0; i < 3; i++) expect((await t.req('GET', '/v1/search?q=echo', { headers: fromIp('203.0.113.77') })).status).toBe(200)
    expect((await t.req('GET', '/v1/search?q=echo', { headers: fromIp('::ffff:203.0.113.77') })).status).toBe(429)
  })
})

describe('the client address, continued', () => {
  test('a proxy that writes the source port into X-Forwarded-For: a new port is not a new client', async () => {
    freshMinute()
    const rs: number[] = []
    for (let port = 40001; port <= 40004; port++) rs.push((await t.req('GET', '/v1/search?q=echo', { headers: fromIp(`203.0.113.88:${port}`) })).status)
    for (const hop of ['[2001:db8:5:5::1]:443', '[2001:db8:5:5::2]']) rs.push((await t.req('GET', '/v1/search?q=echo', { headers: fromIp(hop) })).status)
    expect(rs).toEqual([200, 200, 200, 429, 200, 200])
  })
})

describe('Retry-After', () => {
  test('a client that waits as long as RATE_LIMITED says is let in', async () => {
    freshMinute()
    const ip = '198.51.100.40'
    for (let i = 0; i < 3; i++) expect((await t.req('GET', '/v1/search?q=echo', { headers: fromIp(ip) })).status).toBe(200)
    const refused = await t.req('GET', '/v1/search?q=echo', { headers: fromIp(ip) })
    expect(refused.status).toBe(429)
    const wait = refused.body.retry_after_s as number
    expect(refused.headers.get('retry-after')).toBe(String(wait))
    // Told to the second (rounded up): a second less is still too early, the time told is enough.
    t.clock.advance((wait - 1) * 1000)
    expect((await t.req('GET', '/v1/search?q=echo', { headers: fromIp(ip) })).status).toBe(429)
    t.clock.advance(1000)
    expect((await t.req('GET', '/v1/search?q=echo', { headers: fromIp(ip) })).status).toBe(200)
  })
})

describe('Retry-After, continued', () => {
  test('with the previous minute still weighed: told to the second', async () => {
    freshMinute()
    const ip = '198.51.100.41'
    const search = async () => (await t.req('GET', '/v1/search?q=echo', { headers: fromIp(ip) })).status
    for (let i = 0; i < 3; i++) expect(await search()).toBe(200)
    // A minute on, the previous minute's 3 weigh 2: one more passes, the next is refused.
    t.clock.advance(60_000)
    expect(await search()).toBe(200)
    const refused = await t.req('GET', '/v1/search?q=echo', { headers: fromIp(ip) })
    expect(refused.status).toBe(429)
    const wait = refused.body.retry_after_s as number
    expect(wait).toBeLessThan(60)
    t.clock.advance((wait - 1) * 1000)
    expect(await search()).toBe(429)
    t.clock.advance(1000)
    expect(await search()).toBe(200)
  })
})

describe('Retry-After of the per-token limit', () => {
  // authorize.lua counts a request that needs no debit; debit.lua counts a paid one.
  const routes: [string, string, string][] = [
    ['authorize.lua', 'GET', '/v1/balance'],
    ['debit.lua', 'POST', '/v1/call/test.cheap'],
  ]
  for (const [script, method, path] of routes)
    test(`${script}: a token that waits as long as RATE_LIMITED says is let in, also with the previous minute weighed`, async () => {
      freshMinute()
      const acct = await t.signup(undefined, {})
      const send = async () => t.req(method, path, { token: acct.token, ...(method === 'POST' ? { body: {} } : {}) })
      for (let i = 0; i < t.s.cfg.RATE_LIMIT_PER_TOKEN; i++) expect((await send()).status).toBe(200)
      // Twice: once when this minute is full, once when the previous minute's count still weighs.
      // It said "the end of this minute", when the sliding window still weighs this minute in full.
      for (const weighed of [false, true]) {
        const refused = await send()
        expect(refused.body.error).toBe('RATE_LIMITED')
        const wait = refused.body.retry_after_s as number
        if (weighed) expect(wait).toBeLessThan(60)
        t.clock.advance((wait - 1) * 1000)
        expect((await send()).status).toBe(429)
        t.clock.advance(1000)
        expect((await send()).status).toBe(200)
      }
    })
})

describe('JSON nested deep in a field the schema types', () => {
  const deep = (n: number) => '['.repeat(n) + ']'.repeat(n)

  test('signup origin nested 5,000 levels → 400 naming the field, not 500', async () => {
    freshMinute()
    const r = await t.req('POST', '/v1/signup', { body: `{"email":"deep-${t.prefix}@example.com","origin":${deep(5000)}}`, headers: fromIp('198.51.100.60') })
    expect({ status: r.status, error: r.body.error, field: r.body.field }).toEqual({ status: 400, error: 'BAD_REQUEST', field: 'origin' })
  })

  test('a protected route: no bearer → 401 (auth first), not 500', async () => {
    freshMinute()
    const r = await t.req('POST', '/v1/agents', { body: `{"name":${deep(5000)}}`, headers: fromIp('198.51.100.61') })
    expect({ status: r.status, error: r.body.error }).toEqual({ status: 401, error: 'UNAUTHORIZED' })
  })
})

describe('a repeated query parameter', () => {
  test('every value is checked for control characters, not only the one the router keeps', async () => {
    freshMinute()
    for (const q of ['q=%00&q=echo', 'q=echo&q=%00']) {
      const r = await t.req('GET', `/v1/search?${q}`, { headers: fromIp('198.51.100.70') })
      expect({ q, status: r.status, error: r.body.error, field: r.body.field }).toEqual({ q, status: 400, error: 'BAD_REQUEST', field: 'q' })
    }
  })

  test('the console reads the first value: a NUL there never reaches the activity query', async () => {
    freshMinute()
    const { ConsoleClient } = await import('../helpers/console')
    const owner = await t.signup(undefined)
    const c = new ConsoleClient(t)
    await c.signIn(owner.token)
    const warned: string[] = []
    const warn = t.s.log.warn.bind(t.s.log)
    t.s.log.warn = (msg, fields) => {
      warned.push(msg)
      warn(msg, fields)
    }
    try {
      const r = await c.get('/console/activity?agent=%00&agent=x')
      expect(r.status).not.toBe(200)
    } finally {
      t.s.log.warn = warn
    }
    expect(warned).not.toContain('activity_postgres_unavailable')
  })
})

describe('TRUSTED_PROXIES entries', () => {
  test('a CIDR block or an IPv4-mapped spelling trusts its proxies (compared as written, they trusted none)', async () => {
    for (const entry of ['127.0.0.0/8', '::ffff:127.0.0.1', '10.9.0.0/16,127.0.0.1/32']) {
      const app = await startTestApp({ env: { RATE_LIMIT_PER_IP: '1', TRUSTED_PROXIES: entry } })
      try {
        const search = async (ip: string) => (await app.req('GET', '/v1/search?q=echo', { headers: fromIp(ip) })).status
        // Two clients behind the proxy, each with its own budget of one.
        expect([entry, await search('198.51.100.71'), await search('198.51.100.72'), await search('198.51.100.71')]).toEqual([entry, 200, 200, 429])
      } finally {
        await app.close()
      }
    }
  })

  test('the matcher: IPv4 and IPv6 blocks, spellings, and nothing outside', () => {
    const trusted = trustedProxies('10.0.0.0/8, 192.0.2.7, fd00::/8, 2001:db8:1::/48')
    const yes = ['10.1.2.3', '::ffff:10.255.0.1', '192.0.2.7', 'fd12::1', 'FD00:0:0::abcd', '2001:db8:1:ffff::9', '[2001:db8:1::1]:443', '10.0.0.1:5555']
    const no = ['11.0.0.1', '192.0.2.8', 'fe80::1', '2001:db8:2::1', '::ffff:11.0.0.1', 'not-an-ip', '', '::1']
    expect(yes.filter((a) => !trusted(a))).toEqual([])
    expect(no.filter((a) => trusted(a))).toEqual([])
    expect(trustedProxies('')('127.0.0.1')).toBe(false)
    expect(trustedProxies('0.0.0.0/0')('203.0.113.9')).toBe(true)
    expect(trustedProxies('0.0.0.0/0')('2001:db8::1')).toBe(false)
  })

  test('an entry that is not an address or a block stops the start, naming it', () => {
    for (const bad of ['10.0.0.0/33', 'proxy.internal', '10.0.0.0/x', 'fd00::/129', '10.0.0/8'])
      expect(() => parseConfig({ TRUSTED_PROXIES: bad })).toThrow(ConfigError)
    expect(() => parseConfig({ TRUSTED_PROXIES: '10.0.0.0/8 , ::1' })).not.toThrow()
  })
})
