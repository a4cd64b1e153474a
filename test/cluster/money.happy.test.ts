/**
 * The money paths over HTTP against a real 3-master Redis Cluster (REDIS_CLUSTER_NODES): the same
 * app, the same scripts, every account's keys in one slot of its shard, the shards spread over
 * the masters, and the flusher reading one outbox stream per shard on whichever master holds it.
 *
 * Each money path is one `test` below; a new path is one more case that ends with `settle()`, which
 * flushes and checks the ledger invariants for the accounts it names. Caps, kills and policies on
 * the cluster: governance.happy.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Cluster } from 'ioredis'
import { Flusher } from '../../src/write-behind/flusher'
import { startTestApp, testCatalog, type TestApp } from '../helpers/harness'
import { consentSandbox } from '../helpers/money'
import { assertLedger, type Expectation } from '../helpers/invariants'
import { startRedisCluster, type RedisCluster } from './cluster'
import { cleanupAll } from '../helpers/cleanup'

let cluster: RedisCluster
let t: TestApp
beforeAll(async () => {
  cluster = await startRedisCluster(3)
  t = await startTestApp({
    env: { REDIS_CLUSTER_NODES: cluster.nodes, SIGNUP_ALARM_PER_HOUR: '100000' },
    // A proxy route whose provider refuses connections (port 1), for the proxy's refund.
    catalog: (fakeUrl) => {
      const c = testCatalog(fakeUrl)
      const dead = { base_url: 'http://127.0.0.1:1', key_env: 'FAKE_HOUSE_KEY', auth: { header: 'authorization', scheme: 'Bearer' }, proxy: { price: 3, paths: ['/v1/'], house: { allow: ['/v1/'] } } }
      return { ...c, providers: { ...c.providers, deadproxy: dead } }
    },
  })
})
afterAll(() =>
  cleanupAll(
    () => t?.close(),
    () => cluster?.stop(),
  ),
)

const call = (token: string, slug = 'test.echo', headers: Record<string, string> = {}) =>
  t.req('POST', `/v1/call/${slug}`, { token, body: { q: 'cluster' }, headers })

/** Flush to Postgres and check balance ≥ 0, Redis = Σ entries = Postgres, each entry once. */
const settle = (...accounts: (string | Expectation)[]) =>
  assertLedger(
    t.s,
    accounts.map((a) => (typeof a === 'string' ? { account: a } : a)),
  )

describe('money paths on a 3-master Redis Cluster', () => {
  test('the app really runs on the cluster client', () => {
    expect(t.s.ctx.redis).toBeInstanceOf(Cluster)
  })

  test('signup grants 500; a call debits the price', async () => {
    const a = await t.signup()
    expect(a.balance).toBe(500)
    const r = await call(a.token)
    expect(r.status, r.text).toBe(200)
    expect(r.body).toMatchObject({ charged: 5, balance: 495 })
    const bal = await t.req('GET', '/v1/balance', { token: a.token })
    expect(bal.body).toMatchObject({ balance: 495, spent_today: 5 })
    await settle({ account: a.account_id, balance: 495, debits: [r.body.call_id] })
  })

  test('a provider failure is refunded once', async () => {
    const a = await t.signup()
    const r = await call(a.token, 'test.fail')
    expect(r.status).toBe(502)
    expect(r.body).toMatchObject({ error: 'PROVIDER_ERROR', refunded: true, balance: 500 })
    await settle({ account: a.account_id, balance: 500, refunded: [r.body.call_id] })
  })

  test('referral: both sides +500 on the first successful call, once, under concurrent first calls', async () => {
    const referrer = await t.signup()
    const referred = await t.signup(undefined, { referred_by: referrer.public_ref })
    const rs = await Promise.all(Array.from({ length: 20 }, () => call(referred.token, 'test.cheap')))
    expect(rs.every((r) => r.status === 200)).toBe(true)
    await settle({ account: referred.account_id, balance: 1000 - 20 }, { account: referrer.account_id, balance: 1000 })
  })

  test('Idempotency-Key: a replay returns the first answer, charged once', async () => {
    const a = await t.signup()
    const first = await call(a.token, 'test.echo', { 'idempotency-key': 'cl-1' })
    const again = await call(a.token, 'test.echo', { 'idempotency-key': 'cl-1' })
    expect(first.status).toBe(200)
    expect(again.body).toEqual(first.body)
    await settle({ account: a.account_id, balance: 495, debits: [first.body.call_id] })
  })

  test('500 concurrent calls on a balance that covers 100: exactly 100 succeed, balance 0', async () => {
    const a = await t.signup()
    const rs = await Promise.all(Array.from({ length: 500 }, () => call(a.token)))
    const ok = rs.filter((r) => r.status === 200)
    expect(ok).toHaveLength(100)
    expect(rs.filter((r) => r.status === 402)).toHaveLength(400)
    expect(new Set(ok.map((r) => r.body.balance)).size).toBe(100)
    await settle({ account: a.account_id, balance: 0, debits: ok.map((r) => r.body.call_id) })
  })

  test('accounts land on different masters, and the flusher drains every one of them exactly once', async () => {
    const masters = cluster.masterClients()
    // A master answers MOVED for a key it does not own: only the owner says it exists.
    const holder = async (acct: string) => {
      const key = t.s.ctx.keys.account(acct)
      const owners = await Promise.all(masters.map((m) => m.exists(key).catch(() => 0)))
      expect(owners.filter((n) => n === 1)).toHaveLength(1)
      return owners.indexOf(1)
    }
    const seen = new Map<number, string>()
    // Shards are random per signup; 16 shard tags spread over 3 masters, so this ends quickly.
    for (let i = 0; i < 200 && seen.size < masters.length; i++) {
      const a = await t.signup()
      seen.set(await holder(a.account_id), a.account_id)
    }
    expect(seen.size).toBe(masters.length)
    const accounts = [...seen.values()]
    // The outbox of every master has entries; /status sums the lag over all of them.
    const status = await t.req('GET', '/status')
    expect(status.body).toMatchObject({ status: 'ok', redis: 'ok' })
    expect(status.body.ledger_lag.entries).toBeGreaterThan(0)
    await settle(...accounts.map((account) => ({ account, balance: 500 })))
    expect((await t.req('GET', '/status')).body.ledger_lag.entries).toBe(0)
  })

  test('provider failures mixed into concurrent calls: every failed call refunded once', async () => {
    const a = await t.signup()
    const rs = await Promise.all(Array.from({ length: 120 }, (_, i) => call(a.token, i % 3 === 0 ? 'test.fail' : 'test.cheap')))
    const ok = rs.filter((r) => r.status === 200)
    const failed = rs.filter((r) => r.status === 502)
    expect(ok.length + failed.length).toBe(120)
    await settle({ account: a.account_id, balance: 500 - ok.length, debits: ok.map((r) => r.body.call_id), refunded: failed.map((r) => r.body.call_id) })
  })

  test('the flusher loop and the reclaim of a dead consumer’s entries work across masters', async () => {
    const accounts = await Promise.all(Array.from({ length: 6 }, () => t.signup()))
    await Promise.all(accounts.map((a) => call(a.token)))
    await t.s.flusher.ensureGroups()
    // A consumer reads every shard's entries and dies before committing them.
    const { keys, redis } = t.s.ctx
    for (const a of accounts) await redis.xreadgroup('GROUP', 'flusher', 'dead-consumer', 'COUNT', 1000, 'STREAMS', keys.outbox(keys.shardOf(a.account_id)), '>')
    const survivor = new Flusher(t.s.ctx, t.s.db.db, { batch: 100, intervalMs: 10, staleMs: 50 })
    await Bun.sleep(100)
    survivor.start()
    await survivor.stop(5000)
    await settle(...accounts.map((a) => ({ account: a.account_id, balance: 495 })))
  })

  test('proxy: a forwarded request is debited once; a refused upstream is refunded once', async () => {
    const a = await t.signup()
    // The fake answers 404 on /v1/chat: a provider 4xx is the caller's, charged and passed through.
    const ok = await t.req('POST', '/proxy/fake/v1/chat', { token: a.token, body: { q: 1 } })
    expect(ok.status).toBe(404)
    const charged = ok.headers.get('x-pab-call-id')!
    expect(ok.headers.get('x-pab-charged')).toBe('3')
    const dead = await t.req('POST', '/proxy/deadproxy/v1/chat', { token: a.token, body: { q: 1 } })
    expect(dead.status).toBe(502)
    expect(dead.body).toMatchObject({ error: 'PROVIDER_ERROR', refunded: true })
    await settle({ account: a.account_id, balance: 497, debits: [charged], refunded: [dead.body.call_id] })
  })

  test('top-up through the mandate, and the background auto-refill below the threshold', async () => {
    const a = await t.signup()
    await consentSandbox(t, a.token, { threshold: 200, refill: 1000, ceiling: 10000 })
    const top = await t.req('POST', '/v1/topup', { token: a.token, body: { amount: 2000 } })
    expect(top.status, top.text).toBe(200)
    expect(top.body).toMatchObject({ credits_added: 2000, balance: 2500 })
    // 300-credit calls take the balance below 200: one auto-refill of 1000 follows in the background.
    for (let i = 0; i < 8; i++) expect((await call(a.token, 'test.pricey')).status).toBe(200)
    let balance = 0
    for (let i = 0; i < 100 && balance !== 1100; i++) {
      await Bun.sleep(20)
      balance = (await t.req('GET', '/v1/balance', { token: a.token })).body.balance
    }
    await settle({ account: a.account_id, balance: 2500 - 8 * 300 + 1000 })
  })

  test('public counters are summed over the shards of every master', async () => {
    const before = (await t.req('GET', '/v1/public-stats')).body
    const a = await t.signup()
    const b = await t.signup()
    await call(a.token)
    await call(b.token, 'test.cheap')
    // Without an Idempotency-Key the call is filed just after the answer: wait for both.
    let after = before
    for (let i = 0; i < 50 && after.organic_calls_routed - before.organic_calls_routed < 2; i++) {
      await Bun.sleep(20)
      after = (await t.req('GET', '/v1/public-stats')).body
    }
    expect(after.organic_calls_routed - before.organic_calls_routed).toBe(2)
    expect(after.credits_honored - before.credits_honored).toBe(6)
    await settle({ account: a.account_id, balance: 495 }, { account: b.account_id, balance: 499 })
  })
})
