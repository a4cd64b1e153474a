/**
 * /status is degraded with reason `ledger_lag` while the outbox holds more than
 * STATUS_MAX_LAG_ENTRIES entries or its oldest is older than STATUS_MAX_LAG_MS, and ok again once
 * the flusher caught up.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { STATUS_MAX_LAG_ENTRIES: '5', STATUS_MAX_LAG_MS: '800' } })
})
afterAll(async () => {
  await t.close()
})

const reasons = async () => {
  const r = await t.req('GET', '/status')
  return { status: r.body.status, reasons: r.body.degraded.map((d: { reason: string }) => d.reason) }
}

test('too many entries waiting, or one waiting too long, degrades /status until the flush', async () => {
  await flushAll(t)
  expect(await reasons()).toEqual({ status: 'ok', reasons: [] })
  const a = await t.signup() // account + grant: 2 entries
  expect(await reasons()).toEqual({ status: 'ok', reasons: [] })
  await Bun.sleep(900)
  expect(await reasons()).toEqual({ status: 'degraded', reasons: ['ledger_lag'] }) // the oldest waits too long
  await flushAll(t)
  expect(await reasons()).toEqual({ status: 'ok', reasons: [] })
  for (let i = 0; i < 3; i++) expect((await t.req('POST', '/v1/call/test.cheap', { token: a.token, body: {} })).status).toBe(200)
  await Bun.sleep(50) // the calls are filed just after their answers
  expect(await reasons()).toEqual({ status: 'degraded', reasons: ['ledger_lag'] }) // 6 entries > 5
  await flushAll(t)
  expect(await reasons()).toEqual({ status: 'ok', reasons: [] })
})
