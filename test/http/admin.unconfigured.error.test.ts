/** Without ADMIN_TOKEN the founder surfaces exist but answer NOT_CONFIGURED, whatever the bearer. */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

test('every founder surface → NOT_CONFIGURED (503) naming ADMIN_TOKEN', async () => {
  const owner = await t.signup()
  for (const token of [undefined, owner.token, 'anything-at-all-here'])
    for (const [method, path, body] of [
      ['POST', '/admin/capabilities/test.echo/pause'],
      ['POST', '/admin/capabilities/test.echo/resume'],
      ['POST', '/admin/signups/resume'],
      ['PUT', `/admin/accounts/${owner.account_id}/balance-cap`, { balance_cap: 5 }],
      ['PATCH', '/admin/support/sup_x', { note: 'hi' }],
    ] as [string, string, unknown?][]) {
      const r = await t.req(method, path, { token, body })
      expect([path, r.status, r.body.error]).toEqual([path, 503, 'NOT_CONFIGURED'])
      expect(r.body).toMatchObject({ feature: 'admin', needs: 'ADMIN_TOKEN' })
    }
  expect((await t.req('GET', '/status')).body.paused).toEqual([])
})
