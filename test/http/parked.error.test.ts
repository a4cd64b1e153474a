/**
 * Founder decisions on parked payments refuse ids that name no parked payment with NOT_FOUND —
 * whatever their shape, including a shard number past the last shard — never a 5xx.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'

const ADMIN = 'founder-token-0123456789abcdef'
let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { ADMIN_TOKEN: ADMIN } })
})
afterAll(async () => {
  await t.close()
})

test('approve and reject of a malformed or unknown parked id → 404 NOT_FOUND', async () => {
  for (const id of ['pk_99_x', 'pk_99_abcdefghijkl', 'pk_16_abcdefghijkl', 'pk_00_abcdefghijkl', 'nope', 'pk_0x_abcdefghijkl', 'pk_-1_abcdefghijkl']) {
    for (const action of ['approve', 'reject']) {
      const r = await t.req('POST', `/admin/parked/${id}/${action}`, { token: ADMIN })
      expect([id, action, r.status, r.body.error, r.body.resource]).toEqual([id, action, 404, 'NOT_FOUND', 'parked payment'])
    }
  }
})

test('balance cap of an account id past the last shard → 404 NOT_FOUND', async () => {
  for (const id of ['acc_99_abcdefghijkl', 'acc_16_x', 'nope']) {
    const r = await t.req('PUT', `/admin/accounts/${id}/balance-cap`, { token: ADMIN, body: { balance_cap: 100 } })
    expect([id, r.status, r.body.error]).toEqual([id, 404, 'NOT_FOUND'])
  }
})
