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
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream'
import { apiProcess, callPath, driveLoad, ledgerStores, signupOver, waitDrained, type ApiProcess } from '../helpers/api-process'
import { createTestDatabase, deleteAppKeys } from '../helpers/harness'
import { assertLedger } from '../helpers/invariants'
import type { Services } from '../../src/services'
import { cleanupAll } from '../helpers/cleanup'

let fake: FakeUpstream
let db: Awaited<ReturnType<typeof createTestDatabase>>
let api: ApiProcess
let stores: Services | null = null
const prefix = `fk${Math.random().toString(36).slice(2, 10)}`

beforeAll(async () => {
  fake = startFakeUpstream()
  db = await createTestDatabase()
  api = await apiProcess({ databaseUrl: db.url, prefix, fakeUrl: fake.url, env: { FLUSH_STALE_MS: '300', FLUSH_INTERVAL_MS: '20' } })
  await api.start()
})
afterAll(() =>
  cleanupAll(
    () => api?.dispose(),
    () => stores?.close(),
    () => deleteAppKeys({ REDIS_URL: api.env.REDIS_URL! }, prefix),
    () => fake?.stop(),
    () => db?.drop(),
  ),
)

test('kill -9 of the API under load loses no acknowledged debit and doubles nothing', async () => {
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

  stores = await ledgerStores(api.env)
  const ok = [...first.ok, ...second.ok]
  const refunded = [...first.refunded, ...second.refunded]
  expect(refunded.length).toBeGreaterThan(0)
  const ledgers = await assertLedger(
    stores,
    accounts.map((a) => ({ account: a.account_id })),
    { debits: ok, refunded },
  )
  // Calls cut off by the kill may have been debited (never answered): they are in the ledger as
  // debits without refunds, and counted in the balances like any other.
  const debits = [...ledgers.values()].flatMap((l) => l.lines.filter((x) => x.kind === 'debit'))
  expect(debits.length).toBeGreaterThanOrEqual(ok.length + refunded.length)
  expect(debits.length).toBeLessThanOrEqual(ok.length + refunded.length + first.errors.length)
}, 60_000)
