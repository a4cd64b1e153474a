/**
 * The quick start as a new user runs it: no Redis at REDIS_URL (a loopback port nobody listens on)
 * and no DATABASE_URL, so the service starts its own redis-server and uses PGlite, both with their
 * files in temp dirs. Sign up, pay for a call, stop the service (SIGTERM), start it again: the
 * same token works, the balance is the same, and the Idempotency-Key of the paid call still
 * replays — that record lives only in Redis, so it is the embedded Redis' append-only file that
 * kept it, not a rebuild from Postgres.
 *
 *   bun test test/faults/embedded-restart.test.ts
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import Redis from 'ioredis'
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream'
import { apiProcess, type ApiProcess } from '../helpers/api-process'
import { cleanupAll } from '../helpers/cleanup'
import { freePorts, removeDir, tempDir } from '../helpers/redis-server'

let fake: FakeUpstream
let api: ApiProcess
let redisPort: number
let dataDir: string

beforeAll(async () => {
  fake = startFakeUpstream()
  ;[redisPort] = (await freePorts(1)) as [number]
  dataDir = tempDir('quickstart')
  api = await apiProcess({
    redisUrl: `redis://127.0.0.1:${redisPort}`,
    databaseUrl: '',
    prefix: 'pab',
    fakeUrl: fake.url,
    // An empty DATABASE_URL is unset: the embedded PGlite, as in the quick start.
    env: { DATABASE_URL: '', PGLITE_DIR: join(dataDir, 'pg'), REDIS_DATA_DIR: join(dataDir, 'redis'), FLUSH_INTERVAL_MS: '20' },
  })
})

afterAll(() =>
  cleanupAll(
    () => api?.stop(),
    // Safety net: a redis-server the service started and did not stop (the service was killed).
    async () => {
      const r = new Redis({ port: redisPort, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null }).on('error', () => {})
      try {
        await r.connect()
        await r.call('shutdown', 'nosave')
      } catch {}
      r.disconnect()
    },
    () => api?.dispose(),
    () => fake?.stop(),
    () => removeDir(dataDir),
  ),
)

async function req(method: string, path: string, o: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const res = await fetch(api.url + path, {
    method,
    headers: { 'content-type': 'application/json', ...(o.token ? { authorization: `Bearer ${o.token}` } : {}), ...o.headers },
    body: o.body === undefined ? undefined : JSON.stringify(o.body),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null, text }
}

test('a restart on the embedded defaults keeps accounts, balances, tokens and Redis-only records', async () => {
  await api.start()
  const signup = await req('POST', '/v1/signup', { body: { email: 'quick@example.com' } })
  expect(signup.status, signup.text).toBe(201)
  const token = signup.body.token as string
  const paid = await req('POST', '/v1/call/test.echo', { token, body: { q: 'first' }, headers: { 'idempotency-key': 'quick-1' } })
  expect(paid.status, paid.text).toBe(200)
  const before = await req('GET', '/v1/balance', { token })
  expect(before.body.balance).toBe(495)

  await api.stop()
  // The service stopped its redis-server with it, and the append-only file is on disk.
  expect(existsSync(join(dataDir, 'redis')) && readdirSync(join(dataDir, 'redis')).length).toBeGreaterThan(0)
  const probe = new Redis({ port: redisPort, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null }).on('error', () => {})
  await expect(probe.connect()).rejects.toThrow()
  probe.disconnect()

  await api.start()
  const after = await req('GET', '/v1/balance', { token })
  expect(after.status, after.text).toBe(200)
  expect(after.body.balance).toBe(before.body.balance)
  // The replay comes from the Redis record: same call, charged once.
  const replay = await req('POST', '/v1/call/test.echo', { token, body: { q: 'first' }, headers: { 'idempotency-key': 'quick-1' } })
  expect(replay.status, replay.text).toBe(200)
  expect(replay.body.call_id).toBe(paid.body.call_id)
  const next = await req('POST', '/v1/call/test.echo', { token, body: { q: 'second' } })
  expect(next.status, next.text).toBe(200)
  expect(next.body.balance).toBe(490)
  const status = await req('GET', '/status')
  const reasons = (status.body.degraded as { reason: string }[]).map((r) => r.reason)
  expect(reasons).not.toContain('redis_empty')
  expect(reasons).not.toContain('ledger_rebuild_failed')
}, 90_000)
