/**
 * Allowlist globs are matched inside the money scripts, on Redis' one thread: a glob any owner may
 * store must cost time linear in its length, never exponential. Runs on a private redis-server, so
 * that a regression slows this file's Redis, not the machine's shared one.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { startRedisServer, type RedisServer } from '../helpers/redis-server'

let server: RedisServer
let t: TestApp
beforeAll(async () => {
  server = await startRedisServer()
  t = await startTestApp({ env: { REDIS_URL: server.url } })
})
afterAll(async () => {
  await t.close()
  await server.stop()
})

/** A valid pattern (PATTERN in src/governance/allowlist.ts) of many stars that matches no slug. */
const hostile = (stars: number) => '*'.repeat(stars) + 'q'

describe('allowlist globs on Redis', () => {
  test("a glob of many '*' is matched in linear time: the call is refused at once, Redis never held", async () => {
    const a = await t.signup()
    // 32 stars: about half a minute for a backtracking matcher on a 9-character slug (28 took two
    // seconds; 79, the most a pattern holds, would hold Redis for hours), past this file's timeout;
    // a linear one answers in microseconds. The bound is far from both, so a loaded CI never trips it.
    const put = await t.req('PUT', '/v1/policies', { token: a.token, body: { account: { allowlist: [hostile(32)] } } })
    expect(put.status).toBe(200)
    const started = performance.now()
    const r = await t.req('POST', '/v1/call/test.echo', { token: a.token, body: { q: 'x' } })
    const ms = performance.now() - started
    expect(r.body).toMatchObject({ error: 'POLICY_DENIED', rule: 'account_allowlist' })
    expect(ms).toBeLessThan(2_000)
  })

  test('globs still match as before: * spans any run of characters, literals match themselves', async () => {
    const a = await t.signup()
    const allowed = async (pattern: string, slug: string) => {
      await t.req('PUT', '/v1/policies', { token: a.token, body: { account: { allowlist: [pattern] } } })
      const r = await t.req('POST', `/v1/call/${slug}`, { token: a.token, body: { q: 'x' } })
      return r.status === 200
    }
    expect(await allowed('test.*', 'test.echo')).toBe(true)
    expect(await allowed('*.echo', 'test.echo')).toBe(true)
    expect(await allowed('t*t.e*o', 'test.echo')).toBe(true)
    expect(await allowed('*', 'test.cheap')).toBe(true)
    expect(await allowed('**test**echo**', 'test.echo')).toBe(true)
    expect(await allowed('test*', 'test.echo')).toBe(true)
    expect(await allowed('test.ech', 'test.echo')).toBe(false)
    expect(await allowed('*.ech', 'test.echo')).toBe(false)
    expect(await allowed('test-*', 'test.echo')).toBe(false)
    // '.' is a literal, not "any character".
    expect(await allowed('test.e.ho', 'test.echo')).toBe(false)
    expect(await allowed('*x*', 'test.echo')).toBe(false)
  })
})
