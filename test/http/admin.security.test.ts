/** Who may use the founder surfaces: only `Bearer $ADMIN_TOKEN`. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'

const ADMIN = 'founder-secret-0123456789abcdef'
let t: TestApp
let victim: { token: string; account_id: string }
let agentToken: string
beforeAll(async () => {
  t = await startTestApp({ env: { ADMIN_TOKEN: ADMIN, RATE_LIMIT_PER_TOKEN: '20' } })
  victim = await t.signup()
  agentToken = (await t.req('POST', '/v1/agents', { token: victim.token, body: { name: 'a' } })).body.token
})
afterAll(async () => {
  await t.close()
})

const surfaces = (): [string, string, unknown?][] => [
  ['POST', '/admin/capabilities/test.echo/pause'],
  ['POST', '/admin/capabilities/test.echo/resume'],
  ['POST', '/admin/signups/resume'],
  ['PUT', `/admin/accounts/${victim.account_id}/balance-cap`, { balance_cap: 1 }],
  ['PATCH', '/admin/support/sup_x', { status: 'resolved' }],
]

describe('founder surfaces', () => {
  test('a missing bearer, an unknown one, or a near-miss of the founder token → UNAUTHORIZED (401)', async () => {
    for (const token of [undefined, 'sk_' + 'A'.repeat(43), ADMIN.slice(0, -1), ADMIN + 'x', ADMIN.toUpperCase()])
      for (const [method, path, body] of surfaces()) {
        const r = await t.req(method, path, { token, body })
        expect([path, r.status, r.body.error]).toEqual([path, 401, 'UNAUTHORIZED'])
      }
  })

  test("a valid owner or agent token → FORBIDDEN (403): it is known, it is just not the founder's", async () => {
    for (const token of [victim.token, agentToken])
      for (const [method, path, body] of surfaces()) {
        const r = await t.req(method, path, { token, body })
        expect([path, r.status, r.body.error]).toEqual([path, 403, 'FORBIDDEN'])
        expect(r.body.role).toContain('founder')
      }
  })

  test("a valid token refused on a founder surface is counted in its token's rate window: /admin is no unlimited route", async () => {
    const a = await t.signup()
    const limit = t.s.cfg.RATE_LIMIT_PER_TOKEN
    for (let i = 0; i < limit; i++) expect((await t.req('GET', '/admin/parked', { token: a.token })).status).toBe(403)
    const over = await t.req('GET', '/admin/parked', { token: a.token })
    expect([over.status, over.body.error]).toEqual([429, 'RATE_LIMITED'])
    expect((await t.req('GET', '/v1/balance', { token: a.token })).status).toBe(429)
  })

  test('none of the refused requests changed anything', async () => {
    expect((await t.req('GET', '/status')).body.paused).toEqual([])
    expect((await t.req('GET', '/v1/policies', { token: victim.token })).body.account.balance_cap).toBe(100000)
  })

  test('the founder token in a query string or as x-api-key is not accepted', async () => {
    expect((await t.req('POST', `/admin/signups/resume?token=${ADMIN}`)).status).toBe(401)
    expect((await t.req('POST', '/admin/signups/resume', { headers: { 'x-api-key': ADMIN } })).status).toBe(401)
    expect((await t.req('POST', '/admin/signups/resume', { token: ADMIN })).status).toBe(200)
  })
})
