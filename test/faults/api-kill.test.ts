/**
 * Fault: `kill -9` of the API process under load. The process dies with calls in flight, outbox
 * entries read but not yet committed or acked, and a flusher consumer that never comes back. After
 * a restart (a new consumer, which takes the dead one's pending entries over) and a drain, every
 * debit a client saw acknowledged is in Postgres once, every refund a client was told of is there
 * once, and Redis, the outbox and Postgres agree to the credit.
 *
 *   bun test test/faults/api-kill.test.ts
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { callPath, driveLoad, signupOver, waitDrained } from '../helpers/api-process'
import { startFaultRig, type FaultRig } from '../helpers/fault-rig'
import { assertLedger } from '../helpers/invariants'

let rig: FaultRig
beforeAll(async () => {
  rig = await startFaultRig({ env: { FLUSH_STALE_MS: '300' } })
})
afterAll(() => rig?.close())

test('kill -9 of the API under load loses no acknowledged debit and doubles nothing', async () => {
  const { api, prefix } = rig
  const accounts = await signupOver(api.url, 20, prefix)
  const tokens = accounts.map((a) => a.token)
  // Every seventh call fails upstream and is refunded; the rest cost 1 credit.
  const slug = (i: number) => (i % 7 === 0 ? 'test.fail' : 'test.cheap')

  const before = driveLoad(api.url, tokens, { workers: 24, path: callPath(slug) })
  await Bun.sleep(1500)
  await api.kill()
  const first = await before.stop()
  expect(first.ok.length).toBeGreaterThan(50)
  expect(first.errors.length).toBeGreaterThan(0) // the kill really cut requests off

  await api.start()
  const after = driveLoad(api.url, tokens, { workers: 8, path: callPath(slug) })
  await Bun.sleep(500)
  const second = await after.stop()
  expect(second.errors).toHaveLength(0)
  await waitDrained(api.url)
  await api.stop()

  const ok = [...first.ok, ...second.ok]
  const refunded = [...first.refunded, ...second.refunded]
  expect(refunded.length).toBeGreaterThan(0)
  const ledgers = await assertLedger(
    await rig.ledger(),
    accounts.map((a) => ({ account: a.account_id })),
    { debits: ok, refunded },
  )
  // Calls cut off by the kill may have been debited (never answered): they are in the ledger as
  // debits without refunds (the sweeper refunds them once their deadline passes, a minute past
  // the capability's timeout — later than this test looks), counted in the balances like any other.
  const debits = [...ledgers.values()].flatMap((l) => l.lines.filter((x) => x.kind === 'debit'))
  expect(debits.length).toBeGreaterThanOrEqual(ok.length + refunded.length)
  expect(debits.length).toBeLessThanOrEqual(ok.length + refunded.length + first.errors.length)
}, 60_000)
