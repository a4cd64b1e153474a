/**
 * A real app over the real local Redis and Postgres, isolated per test file: a random Redis key
 * prefix, a fresh database (migrated), a loopback fake upstream, and a clock the test may move.
 * Nothing is mocked.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import Redis from 'ioredis'
import { createApp, type App } from '../../src/app'
import { ManualClock, type Clock } from '../../src/clock'
import { parseConfig, type Config } from '../../src/config'
import { createRedis, masters } from '../../src/redis/client'
import { listen, type Listener } from '../../src/listen'
import { buildServices, type Services } from '../../src/services'
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream'

export const PG_ADMIN_URL = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

export function pgUrl(db: string): string {
  const u = new URL(PG_ADMIN_URL)
  u.pathname = `/${db}`
  return u.toString()
}

export async function createTestDatabase(): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const name = `t_${Math.random().toString(36).slice(2, 12)}`
  const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} })
  await admin.unsafe(`CREATE DATABASE "${name}"`)
  await admin.end()
  return {
    name,
    url: pgUrl(name),
    async drop() {
      const a = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} })
      await a.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
      await a.end()
    },
  }
}

/** The catalog the HTTP tests use: every capability points at the fake upstream. */
export function testCatalog(fakeUrl: string) {
  const schema = { type: 'object', properties: { q: { type: 'string', minLength: 1 } }, additionalProperties: true }
  const cap = (slug: string, path: string, extra: Record<string, unknown> = {}) => ({
    slug,
    provider: 'fake',
    lane: 'house',
    price: 5,
    method: 'POST',
    path,
    timeout_ms: 2000,
    description: `test capability ${slug}`,
    params: schema,
    ...extra,
  })
  return {
    providers: {
      // Its flat-priced route is opened on the house key explicitly (the house lane is closed by default: docs/house-lane.md).
      fake: { base_url: fakeUrl, key_env: 'FAKE_HOUSE_KEY', auth: { header: 'authorization', scheme: 'Bearer' }, proxy: { price: 3, paths: ['/v1/'], house: { allow: ['/v1/'] } } },
      fakebyok: { base_url: fakeUrl, auth: { header: 'x-api-key' }, byok: true, proxy: { price: 2, paths: ['/v1/'] } },
      dead: { base_url: 'http://127.0.0.1:1', key_env: 'FAKE_HOUSE_KEY', auth: { header: 'authorization', scheme: 'Bearer' } },
      nokey: { base_url: fakeUrl, key_env: 'NOKEY_NEVER_SET', auth: { header: 'authorization', scheme: 'Bearer' } },
    },
    capabilities: [
      cap('test.echo', '/echo', { description: 'echo the params back' }),
      cap('test.search', '/echo', { description: 'search the web for anything', params: { type: 'object', required: ['q'], properties: { q: { type: 'string', minLength: 1 } } } }),
      cap('test.fail', '/status/500'),
      cap('test.unavailable503', '/status/503'),
      cap('test.bad', '/status/400'),
      cap('test.hang', '/hang', { timeout_ms: 300 }),
      cap('test.reset', '/reset'),
      cap('test.big', '/big/3000000'),
      cap('test.chunked', '/chunked/3000000'),
      cap('test.cheap', '/echo', { price: 1 }),
      cap('test.pricey', '/echo', { price: 300 }),
      cap('test.free', '/echo', { lane: 'free', price: 0 }),
      cap('test.byok', '/echo', { provider: 'fakebyok', lane: 'byok', price: 1 }),
      cap('test.nokey', '/echo', { provider: 'nokey' }),
      cap('test.refused', '/echo', { provider: 'dead' }),
    ],
  }
}

export interface TestApp {
  app: App
  s: Services
  clock: ManualClock
  fake: FakeUpstream
  db: { name: string; url: string }
  redis: Redis
  prefix: string
  req(method: string, path: string, opt?: { token?: string; body?: unknown; headers?: Record<string, string> }): Promise<TestResponse>
  signup(email?: string, extra?: Record<string, unknown>): Promise<{ token: string; account_id: string; public_ref: string; balance: number }>
  /** Starts a real listening server (the production listener, src/listen.ts) on loopback; returns its base URL. */
  listen(): Promise<string>
  close(): Promise<void>
}

export interface TestResponse {
  status: number
  headers: Headers
  body: any
  text: string
}

export interface TestAppOptions {
  env?: Record<string, string>
  clock?: Clock
  catalog?: (fakeUrl: string) => unknown
  flusherDatabaseUrl?: string
  /** Share an existing database (a second instance of the same deployment). */
  database?: { name: string; url: string }
  prefix?: string
}

let emailSeq = 0

export async function startTestApp(opt: TestAppOptions = {}): Promise<TestApp> {
  const fake = startFakeUpstream()
  const ownDb = opt.database ? null : await createTestDatabase()
  const db = opt.database ?? ownDb!
  const prefix = opt.prefix ?? `t${Math.random().toString(36).slice(2, 10)}`
  const dir = mkdtempSync(join(tmpdir(), 'pab-'))
  const catalogFile = join(dir, 'catalog.json')
  writeFileSync(catalogFile, JSON.stringify((opt.catalog ?? testCatalog)(fake.url)))
  const env = {
    DATABASE_URL: db.url,
    REDIS_URL,
    REDIS_KEY_PREFIX: prefix,
    CATALOG_FILE: catalogFile,
    LOG: 'silent',
    FAKE_HOUSE_KEY: 'house-secret-key',
    BASE_URL: 'http://pab.test',
    // pab.test is not loopback: the sandbox gateway needs the explicit opt-in.
    PAYMENTS_SANDBOX_PUBLIC: '1',
    // Generous limits by default; the rate-limit tests set their own.
    RATE_LIMIT_PER_IP: '1000000',
    RATE_LIMIT_PER_TOKEN: '1000000',
    // Likewise the signup alarm (the alarm tests set their own): files that sign up many accounts
    // at one manual-clock instant would trip it otherwise.
    SIGNUP_ALARM_PER_HOUR: '1000000',
    // Likewise the runaway-agent breaker (the breaker tests set their own): concurrency tests fire
    // dozens of identical agent calls at one manual-clock instant.
    BREAKER_CREDITS_PER_MINUTE: '1000000',
    BREAKER_IDENTICAL_PER_MINUTE: '1000000',
    // Mail (.eml files) stays in this test's temp dir; tests read it via s.cfg.MAIL_DIR.
    MAIL_DIR: join(dir, 'mail'),
    // The test catalog only; the demo tests turn the built-in demo provider on.
    DEMO_PROVIDER: 'off',
    ...opt.env,
  }
  // TEST_CLOCK_START (an ISO instant) starts every app's clock there: a run that replays a start near
  // 00:00 HKT or a month's end finds the tests that cross it without meaning to (test/helpers/clock-place.ts).
  const clock = (opt.clock as ManualClock) ?? new ManualClock(testClockStart())
  const cfg = parseConfig(env)
  const s = await buildServices(cfg, { clock, env, flusherDatabaseUrl: opt.flusherDatabaseUrl })
  const app = createApp(s)
  const redis = new Redis(env.REDIS_URL)

  let listener: Listener | undefined
  const req: TestApp['req'] = async (method, path, o = {}) => {
    const headers: Record<string, string> = { ...o.headers }
    if (o.token) headers.authorization = `Bearer ${o.token}`
    let body: string | undefined
    if (o.body !== undefined) {
      body = typeof o.body === 'string' ? o.body : JSON.stringify(o.body)
      headers['content-type'] ??= 'application/json'
    }
    return readResponse(await app.handle(new Request(`http://pab.test${path}`, { method, headers, body })))
  }

  return {
    app,
    s,
    clock,
    fake,
    db,
    redis,
    prefix,
    req,
    async signup(email, extra = {}) {
      const r = await req('POST', '/v1/signup', { body: { email: email ?? `agent${++emailSeq}-${prefix}@example.com`, ...extra } })
      if (r.status !== 201) throw new Error(`signup failed: ${r.status} ${r.text}`)
      return r.body
    },
    async listen() {
      listener ??= await listen(app, { port: 0, hostname: '127.0.0.1', maxBodyBytes: cfg.MAX_BODY_BYTES })
      return listener.url
    },
    async close() {
      await listener?.stop(true)
      await s.close()
      fake.stop()
      await deleteAppKeys(cfg, prefix)
      redis.disconnect()
      if (ownDb) await ownDb.drop()
    },
  }
}

/** Deletes the prefix's keys wherever the app kept them: its one Redis, or every cluster master. */
/** A Response as the tests read it: status, headers, the text, and the JSON when it is JSON. */
export async function readResponse(res: Response): Promise<TestResponse> {
  const text = await res.text()
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {}
  return { status: res.status, headers: res.headers, body: parsed, text }
}

export async function deleteAppKeys(cfg: Pick<Config, 'REDIS_URL' | 'REDIS_CLUSTER_NODES'>, prefix: string): Promise<void> {
  const client = createRedis(cfg)
  try {
    await client.ping() // a cluster client learns its masters on connect
    for (const node of masters(client)) await deleteKeys(node, prefix)
  } finally {
    client.disconnect()
  }
}

export async function deleteKeys(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0'
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
    cursor = next
    // One UNLINK per key: a cluster node refuses a multi-key UNLINK across slots.
    if (batch.length) await batch.reduce((p, k) => p.unlink(k), redis.pipeline()).exec()
  } while (cursor !== '0')
}

function testClockStart(): number {
  const at = process.env.TEST_CLOCK_START
  if (!at) return Date.now()
  const ms = Date.parse(at)
  if (Number.isNaN(ms)) throw new Error(`TEST_CLOCK_START=${at} is no instant (ISO 8601, e.g. 2026-11-30T15:59:00Z)`)
  return ms
}
