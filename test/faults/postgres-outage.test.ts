/**
 * Fault: Postgres unreachable for a while under load, then back. The API process reaches its
 * database through a TCP relay the test cuts (the machine's Postgres stays up for everyone else).
 * Paid calls never wait on Postgres, so they all keep succeeding; the outbox grows, /status says
 * so, and once Postgres answers again the flusher drains the backlog: every entry once.
 *
 *   bun test test/faults/postgres-outage.test.ts
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { callPath, driveLoad, signupOver, waitDrained } from '../helpers/api-process'
import { startFaultRig, type FaultRig } from '../helpers/fault-rig'
import { assertLedger } from '../helpers/invariants'

let rig: FaultRig
beforeAll(async () => {
  rig = await startFaultRig({ postgresRelay: true })
})
afterAll(() => rig?.close())

const status = async () => (await (await fetch(`${rig.api.url}/status`)).json()) as { status: string; postgres: string; ledger_lag: { entries: number } }

test('Postgres down under load: no call fails, the backlog drains when it returns, nothing lost or doubled', async () => {
  const { api, relay, prefix } = rig
  const accounts = await signupOver(api.url, 30, prefix)
  const load = driveLoad(api.url, accounts.map((a) => a.token), { workers: 16, path: callPath((i) => (i % 9 === 0 ? 'test.fail' : 'test.cheap')) })
  await Bun.sleep(300)
  relay!.down()
  await Bun.sleep(1500)
  const during = await status()
  expect(during).toMatchObject({ status: 'degraded', postgres: 'down' })
  const lagDuring = during.ledger_lag.entries
  await Bun.sleep(500)
  expect((await status()).ledger_lag.entries).toBeGreaterThan(lagDuring) // calls go on, entries wait
  relay!.up()
  await Bun.sleep(300)
  const tally = await load.stop()
  expect(tally.errors).toHaveLength(0)
  // 402s are fine (balances run out under this load); no 5xx beyond refunded provider errors.
  expect(tally.failedAt).toHaveLength(0)
  expect(tally.ok.length).toBeGreaterThan(100)

  await waitDrained(api.url)
  expect(await status()).toMatchObject({ status: 'ok', postgres: 'ok' })
  await api.stop()
  await assertLedger(await rig.ledger(), accounts.map((a) => ({ account: a.account_id })), { debits: tally.ok, refunded: tally.refunded })
}, 60_000)
