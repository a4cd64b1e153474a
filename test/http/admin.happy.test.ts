import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'

const ADMIN = 'founder-secret-0123456789abcdef'
let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { ADMIN_TOKEN: ADMIN } })
})
afterAll(async () => {
  await t.close()
})

const founder = (method: string, path: string, body?: unknown) => t.req(method, path, { token: ADMIN, body })

describe('founder: capability pause', () => {
  test('pause → calls answer API_PAUSED pointing at /status, which lists it; resume → live again', async () => {
    const a = await t.signup()
    const paused = await founder('POST', '/admin/capabilities/test.cheap/pause')
    expect(paused.status).toBe(200)
    expect(paused.body).toEqual({ slug: 'test.cheap', status: 'paused' })

    const r = await t.req('POST', '/v1/call/test.cheap', { token: a.token, body: {} })
    expect(r.status).toBe(503)
    expect(r.body).toMatchObject({ error: 'API_PAUSED', slug: 'test.cheap', status_url: '/status' })
    expect((await t.req('GET', '/v1/balance', { token: a.token })).body.balance).toBe(500)
    expect((await t.req('GET', '/status')).body.paused).toEqual(['test.cheap'])
    expect((await t.req('GET', '/capabilities')).body.paused).toEqual(['test.cheap'])
    // Other capabilities are untouched; pausing twice is harmless.
    expect((await t.req('POST', '/v1/call/test.echo', { token: a.token, body: {} })).status).toBe(200)
    expect((await founder('POST', '/admin/capabilities/test.cheap/pause')).body.status).toBe('paused')

    const resumed = await founder('POST', '/admin/capabilities/test.cheap/resume')
    expect(resumed.body).toEqual({ slug: 'test.cheap', status: 'live' })
    expect((await t.req('POST', '/v1/call/test.cheap', { token: a.token, body: {} })).status).toBe(200)
    expect((await t.req('GET', '/status')).body.paused).toEqual([])
  })

  test('a capability without its house key resumes to "unavailable", not "live"', async () => {
    await founder('POST', '/admin/capabilities/test.nokey/pause')
    expect((await founder('POST', '/admin/capabilities/test.nokey/resume')).body).toEqual({ slug: 'test.nokey', status: 'unavailable' })
  })

  test('an unknown slug → UNKNOWN_API; nothing is paused', async () => {
    const r = await founder('POST', '/admin/capabilities/no.such/pause')
    expect(r.status).toBe(404)
    expect(r.body).toMatchObject({ error: 'UNKNOWN_API', slug: 'no.such' })
    expect((await t.req('GET', '/status')).body.paused).toEqual([])
  })
})

describe("founder: an account's balance cap", () => {
  test('set → visible in the policies and the balance of the account', async () => {
    const a = await t.signup()
    const r = await founder('PUT', `/admin/accounts/${a.account_id}/balance-cap`, { balance_cap: 250000 })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ account_id: a.account_id, balance_cap: 250000, balance: 500 })
    expect((await t.req('GET', '/v1/policies', { token: a.token })).body.account.balance_cap).toBe(250000)
    expect((await t.req('GET', '/v1/balance', { token: a.token })).body.balance_cap).toBe(250000)
  })

  test('an unknown or malformed account id → NOT_FOUND; a bad cap → BAD_REQUEST', async () => {
    for (const id of ['acc_03_doesnotexist', 'acc_99_x', 'nope']) {
      const r = await founder('PUT', `/admin/accounts/${id}/balance-cap`, { balance_cap: 1 })
      expect([id, r.status, r.body.error]).toEqual([id, 404, 'NOT_FOUND'])
    }
    const a = await t.signup()
    for (const body of [{}, { balance_cap: -1 }, { balance_cap: 1.5 }, { balance_cap: 5, note: 'x' }]) {
      const r = await founder('PUT', `/admin/accounts/${a.account_id}/balance-cap`, body)
      expect([JSON.stringify(body), r.status, r.body.error]).toEqual([JSON.stringify(body), 400, 'BAD_REQUEST'])
    }
    expect((await t.req('GET', '/v1/balance', { token: a.token })).body.balance_cap).toBe(100000)
  })
})
