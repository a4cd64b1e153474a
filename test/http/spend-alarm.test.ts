/**
 * A capability pauses itself when its spend over the last hour passes its catalog spend_alarm.
 * The alarm runs in the flusher (it reads the debit and refund entries), not on the call path:
 * the tests flush by hand where production's flusher loop would.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, testCatalog, type TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'

const ADMIN = 'founder-secret-0123456789abcdef'
const HOUR = 3600_000
const T0 = Date.UTC(2026, 4, 1, 10, 0, 0, 0)
let t: TestApp
beforeAll(async () => {
  t = await startTestApp({
    env: { ADMIN_TOKEN: ADMIN },
    catalog: (url) => {
      const c = testCatalog(url)
      for (const cap of c.capabilities as Record<string, unknown>[]) {
        if (cap.slug === 'test.echo') cap.spend_alarm = 12
        if (cap.slug === 'test.fail') cap.spend_alarm = 5
      }
      return c
    },
  })
  t.clock.set(T0)
})
afterAll(async () => {
  await t.close()
})

const paused = async () => (await t.req('GET', '/status')).body.paused as string[]

describe('the capability spend alarm', () => {
  test('spend up to the alarm is fine; the call that passes it goes through, then the capability pauses', async () => {
    const a = await t.signup()
    const call = (slug = 'test.echo') => t.req('POST', `/v1/call/${slug}`, { token: a.token, body: {} })
    expect((await call()).status).toBe(200)
    expect((await call()).status).toBe(200)
    await flushAll(t)
    expect(await paused()).toEqual([])

    expect((await call()).status).toBe(200)
    await flushAll(t)
    expect(await paused()).toEqual(['test.echo'])
    expect((await t.req('GET', '/capabilities')).body.paused).toEqual(['test.echo'])
    const r = await call()
    expect(r.status).toBe(503)
    expect(r.body).toMatchObject({ error: 'API_PAUSED', slug: 'test.echo', status_url: '/status' })
    // Only that capability.
    expect((await call('test.cheap')).status).toBe(200)
  })

  test('refunded calls are not spend: a failing provider does not trip its alarm', async () => {
    const a = await t.signup()
    for (let i = 0; i < 4; i++) expect((await t.req('POST', '/v1/call/test.fail', { token: a.token, body: {} })).status).toBe(502)
    await flushAll(t)
    expect(await paused()).toEqual(['test.echo'])
  })

  test('a founder resume holds for the rest of the hour; the next hour counts the last 60 minutes again', async () => {
    const a = await t.signup()
    const call = () => t.req('POST', '/v1/call/test.echo', { token: a.token, body: {} })
    expect((await t.req('POST', '/admin/capabilities/test.echo/resume', { token: ADMIN })).body.status).toBe('live')
    t.clock.set(T0 + 30 * 60_000)
    expect((await call()).status).toBe(200)
    await flushAll(t)
    expect(await paused()).toEqual([])

    // 11:00:00.001 — the 10:xx hour (20 credits) still lies almost wholly in the window.
    t.clock.set(T0 + HOUR + 1)
    expect((await call()).status).toBe(200)
    await flushAll(t)
    expect(await paused()).toEqual(['test.echo'])
    await t.req('POST', '/admin/capabilities/test.echo/resume', { token: ADMIN })

    // 12:30 — 10:xx is out of the window and half of 11:xx (5) in it: 2 + 5 ≤ 12.
    t.clock.set(T0 + 2.5 * HOUR)
    expect((await call()).status).toBe(200)
    await flushAll(t)
    expect(await paused()).toEqual([])
  })
})
