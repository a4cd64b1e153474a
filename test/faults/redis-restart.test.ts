/**
 * Fault: the Redis the API runs on loses its scripts (SCRIPT FLUSH) and then restarts (SIGKILL,
 * started again on the same AOF, `appendfsync always`) under load. This test runs its own
 * redis-server on a spare port; the machine's shared Redis is never touched.
 *   - after SCRIPT FLUSH, no request fails (EVALSHA → NOSCRIPT → EVAL, inside ioredis);
 *   - a request fails only inside the restart window (while no Redis answers, plus the client's
 *     reconnect back-off), never after it;
 *   - every debit a client saw acknowledged is still there after the restart (fsync'd before the
 *     reply), and the ledger is exact: nothing lost, nothing doubled.
 *
 *   bun test test/faults/redis-restart.test.ts
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import Redis from 'ioredis'
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream'
import { apiProcess, callPath, driveLoad, ledgerStores, signupOver, waitDrained, type ApiProcess } from '../helpers/api-process'
import { createTestDatabase } from '../helpers/harness'
import { assertLedger } from '../helpers/invariants'
import { startRedisServer, type RedisServer } from '../helpers/redis-server'
import type { Services } from '../../src/services'
import { cleanupAll } from '../helpers/cleanup'

let fake: FakeUpstream
let db: Awaited<ReturnType<typeof createTestDatabase>>
let redis: RedisServer
let api: ApiProcess
let stores: Services | null = null

beforeAll(async () => {
  fake = startFakeUpstream()
  db = await createTestDatabase()
  redis = await startRedisServer({ appendfsync: 'always' })
  api = await apiProcess({ redisUrl: redis.url, databaseUrl: db.url, prefix: 'fr', fakeUrl: fake.url, env: { FLUSH_INTERVAL_MS: '20' } })
  await api.start()
})
afterAll(() =>
  cleanupAll(
    () => api?.dispose(),
    () => stores?.close(),
    () => redis?.stop(),
    () => fake?.stop(),
    () => db?.drop(),
  ),
)

/** How long after Redis answers again a request may still fail (the client's reconnect back-off). */
const GRACE_MS = 1_000

test('SCRIPT FLUSH and a Redis restart under load: no failure outside the restart window, no acknowledged debit lost', async () => {
  const accounts = await signupOver(api.url, 30, 'fr')
  const load = driveLoad(api.url, accounts.map((a) => a.token), { workers: 16, path: callPath((i) => (i % 9 === 0 ? 'test.fail' : 'test.cheap')) })
  await Bun.sleep(300)

  const admin = new Redis(redis.url)
  await admin.script('FLUSH')
  admin.disconnect()
  await Bun.sleep(500)
  const failedBeforeRestart = load.tally.failedAt.length + load.tally.errors.length
  expect(failedBeforeRestart).toBe(0)

  const killedAt = Date.now()
  await redis.kill()
  await Bun.sleep(300)
  await redis.start()
  const backAt = Date.now()
  await Bun.sleep(1_500)
  const tally = await load.stop()

  const failures = [...tally.failedAt, ...tally.errors]
  const outside = failures.filter((at) => at < killedAt || at > backAt + GRACE_MS)
  expect(outside, `failures outside [kill, back + ${GRACE_MS} ms]`).toEqual([])
  expect(tally.ok.length).toBeGreaterThan(100)

  await waitDrained(api.url)
  await api.stop()
  stores = await ledgerStores(api.env)
  await assertLedger(stores, accounts.map((a) => ({ account: a.account_id })), { debits: tally.ok, refunded: tally.refunded })
}, 60_000)
