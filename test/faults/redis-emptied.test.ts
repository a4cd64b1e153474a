/**
 * Fault: the Redis under two running API instances is emptied (FLUSHALL: what a failover to a
 * fresh replica or a lost volume looks like to the service), while Postgres holds every account.
 * Runs on its own redis-server; the machine's shared Redis is never touched.
 *   - from the first request after the loss, both instances answer money paths (paid call, balance,
 *     signup) with LEDGER_UNAVAILABLE — never UNAUTHORIZED, never a balance of 0 — whether the
 *     token was cached in the instance or not, and /status is degraded;
 *   - while another holder keeps the rebuild lock (here: the test), nobody rebuilds and the answers
 *     stay 503;
 *   - once the lock is free exactly one instance restores the accounts (the other waits for the
 *     marks), every balance equals its ledger and what it was before, tokens work again, and every
 *     shard's outbox goes on past the newest entry already flushed.
 *
 *   bun test test/faults/redis-emptied.test.ts
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import Redis from 'ioredis'
import postgres from 'postgres'
import { Keys, SHARDS } from '../../src/redis/keys'
import { apiProcess, signupOver, waitDrained, type ApiProcess } from '../helpers/api-process'
import { startFaultRig, type FaultRig } from '../helpers/fault-rig'
import { assertLedger } from '../helpers/invariants'
import { startRedisServer, type RedisServer } from '../helpers/redis-server'
import { cleanupAll } from '../helpers/cleanup'

let redis: RedisServer
let rig: FaultRig
let second: ApiProcess
let admin: Redis | null = null

beforeAll(async () => {
  redis = await startRedisServer()
  rig = await startFaultRig({ env: { REDIS_URL: redis.url, LEDGER_CHECK_MS: '300' }, also: () => redis?.stop() })
  // The second instance's periodic check is out of reach of the test: it can only learn of the
  // loss from the requests themselves (a refused token, a signup re-reading the marks).
  second = await apiProcess({ redisUrl: redis.url, databaseUrl: rig.db.url, prefix: rig.prefix, fakeUrl: rig.fake.url, env: { FLUSH_INTERVAL_MS: '20', LEDGER_CHECK_MS: '600000' } })
  await second.start()
})
afterAll(() =>
  cleanupAll(
    () => admin?.disconnect(),
    () => second?.dispose(),
    () => rig?.close(),
  ),
)

async function req(base: string, method: string, path: string, token?: string, body?: unknown) {
  const res = await fetch(base + path, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null, text, retryAfter: res.headers.get('retry-after') }
}

const unavailable = (r: { status: number; body: any; text: string }) => {
  expect(r.status, r.text).toBe(503)
  expect(r.body.error).toBe('LEDGER_UNAVAILABLE')
}

test('Redis emptied under two instances: 503 until one instance has rebuilt, then every balance is its ledger', async () => {
  const [one, two] = [rig.api.url, second.url]
  const accounts = await signupOver(one, 4, rig.prefix)
  // Accounts 0 and 1 are seen by instance one only (instance two never cached their tokens);
  // 2 and 3 by both. One refunded call each, so the ledger holds both kinds of entries.
  for (const [i, a] of accounts.entries()) {
    for (const base of i < 2 ? [one] : [one, two]) expect((await req(base, 'POST', '/v1/call/test.echo', a.token, {})).status).toBe(200)
    expect((await req(one, 'POST', '/v1/call/test.fail', a.token, {})).status).toBe(502)
  }
  const before = await Promise.all(accounts.map(async (a) => (await req(one, 'GET', '/v1/balance', a.token)).body.balance as number))
  expect(before).toEqual([495, 495, 490, 490])
  await waitDrained(one)

  // The loss, and a rebuild lock held elsewhere, in one step: no instance can rebuild yet.
  admin = new Redis(redis.url)
  const lock = new Keys(rig.prefix).rebuildLock()
  await admin.multi().flushall().set(lock, 'held-by-the-test', 'PX', 60_000).exec()

  // An e-mail Postgres holds is not free because Redis forgot it.
  unavailable(await req(two, 'POST', '/v1/signup', undefined, { email: `f0-${rig.prefix}@example.com` }))
  for (const base of [one, two])
    for (const a of accounts) {
      const paid = await req(base, 'POST', '/v1/call/test.echo', a.token, {})
      unavailable(paid)
      expect(Number(paid.retryAfter)).toBeGreaterThan(0)
      unavailable(await req(base, 'GET', '/v1/balance', a.token))
    }
  unavailable(await req(two, 'POST', '/v1/signup', undefined, { email: `late-${rig.prefix}@example.com` }))
  const status = await req(one, 'GET', '/status')
  expect(status.body.status).toBe('degraded')
  expect(status.body.degraded.map((d: { reason: string }) => d.reason)).toContain('redis_empty')

  // Several check periods later, still nothing restored behind the held lock, still 503.
  await Bun.sleep(1_200)
  expect(await admin.exists(new Keys(rig.prefix).account(accounts[0]!.account_id))).toBe(0)
  unavailable(await req(two, 'POST', '/v1/call/test.echo', accounts[0]!.token, {}))
  expect((await req(two, 'GET', '/status')).body.degraded.map((d: { reason: string }) => d.reason)).toContain('ledger_rebuilding')

  // The lock is freed: one instance rebuilds; until both see the marks, answers are 503 or the truth.
  await admin.del(lock)
  const until = Date.now() + 20_000
  for (const base of [one, two])
    for (;;) {
      const r = await req(base, 'GET', '/v1/balance', accounts[3]!.token)
      if (r.status === 200) break
      unavailable(r)
      if (Date.now() > until) throw new Error(`${base} still refuses after the lock was freed`)
      await Bun.sleep(100)
    }
  for (const base of [one, two]) {
    const after = await Promise.all(accounts.map(async (a) => (await req(base, 'GET', '/v1/balance', a.token)).body.balance))
    expect(after).toEqual(before)
  }
  // Exactly one instance restored the four accounts; the other found the marks back.
  const rebuilt = (await rig.api.log() + '\n' + (await second.log()))
    .split('\n')
    .filter((l) => l.includes('"msg":"ledger_rebuilt"'))
    .map((l) => JSON.parse(l) as { restored: number })
  expect(rebuilt.map((r) => r.restored)).toEqual([4])
  // Every shard's outbox goes on past the newest entry already flushed, whatever the new Redis'
  // clock says: the statement reads an account's entries in stream order (src/ledger/outbox-floor.ts).
  const pg = postgres(rig.db.url, { max: 1, onnotice: () => {} })
  const [newest] = await pg<{ stream_id: string }[]>`select stream_id from ledger_entries order by split_part(stream_id, '-', 1)::bigint desc, split_part(stream_id, '-', 2)::bigint desc limit 1`
  await pg.end()
  const idKey = (id: string) => id.split('-').map(BigInt) as [bigint, bigint]
  const atOrPast = (a: string, b: string) => idKey(a)[0] > idKey(b)[0] || (idKey(a)[0] === idKey(b)[0] && idKey(a)[1] >= idKey(b)[1])
  for (let s = 0; s < SHARDS; s++) {
    const info = (await admin.xinfo('STREAM', new Keys(rig.prefix).outbox(s))) as unknown[]
    const last = String(info[info.indexOf('last-generated-id') + 1])
    expect(atOrPast(last, newest!.stream_id), `shard ${s}: ${last} before ${newest!.stream_id}`).toBe(true)
  }

  for (const [i, a] of accounts.entries()) {
    const paid = await req(i % 2 ? one : two, 'POST', '/v1/call/test.echo', a.token, {})
    expect(paid.status, paid.text).toBe(200)
    expect(paid.body.balance).toBe(before[i]! - 5)
  }
  const signup = await req(two, 'POST', '/v1/signup', undefined, { email: `late-${rig.prefix}@example.com` })
  expect(signup.status, signup.text).toBe(201)

  await waitDrained(one)
  await rig.api.stop()
  await second.stop()
  await assertLedger(
    await rig.ledger(),
    accounts.map((a, i) => ({ account: a.account_id, balance: before[i]! - 5 })),
  )
}, 120_000)
