/**
 * Audit of the paths the other cluster tests never ran on a real 3-master Redis Cluster: the
 * console session (console-session.lua) and the owner-token rotation (rotate-owner.lua) that ends it,
 * the recovery and vault links (claim-link.lua / release-link.lua), parked payments (decide-parked.lua),
 * dead letters and their replay (dead-letter.lua, replay-dead-letter.lua, ack-outbox.lua), the sweeper,
 * recount-agents.lua, release-expired.lua, metered settles of several accounts in one turn (settle.lua), the rate limits
 * (rate-limit.lua, authorize.lua), and the rebuild of a master that lost its data (restore-account.lua,
 * `ledger:rebuild`). Accounts are taken on every master, so each script runs on each of them.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Cluster } from 'ioredis'
import { openPaidCall } from '../../src/paid-request'
import { openMeteredCall } from '../helpers/metering'
import { startTestApp, testCatalog, type TestApp } from '../helpers/harness'
import { assertLedger } from '../helpers/invariants'
import { ConsoleClient } from '../helpers/console'
import { flushAll, redisBalance } from '../helpers/ledger'
import { GOOD_CARD, get, pathOf, postForm, readMails } from '../helpers/money'
import { newLink, submitForm, vaultEnv } from '../helpers/vault'
import { startRedisCluster, type RedisCluster } from './cluster'
import { cleanupAll } from '../helpers/cleanup'

const ADMIN = 'founder-secret-0123456789abcdef'
let cluster: RedisCluster
let t: TestApp
beforeAll(async () => {
  cluster = await startRedisCluster(3)
  t = await startTestApp({
    env: { REDIS_CLUSTER_NODES: cluster.nodes, ADMIN_TOKEN: ADMIN, DEFAULT_BALANCE_CAP: '8000', ...vaultEnv() },
    catalog: testCatalog,
  })
})
afterAll(() =>
  cleanupAll(
    () => t?.close(),
    () => cluster?.stop(),
  ),
)

/** Index of the master that holds the account's keys. */
async function holder(acct: string): Promise<number> {
  const key = t.s.ctx.keys.account(acct)
  const owners = await Promise.all(cluster.masterClients().map((m) => m.exists(key).catch(() => 0)))
  return owners.indexOf(1)
}

/** One account on each master (signups land on random shards). */
async function onEveryMaster(): Promise<Awaited<ReturnType<TestApp['signup']>>[]> {
  const seen = new Map<number, Awaited<ReturnType<TestApp['signup']>>>()
  for (let i = 0; i < 200 && seen.size < 3; i++) {
    const a = await t.signup()
    const h = await holder(a.account_id)
    if (!seen.has(h)) seen.set(h, a)
  }
  expect(seen.size).toBe(3)
  return [...seen.values()]
}

const call = (token: string, slug = 'test.echo') => t.req('POST', `/v1/call/${slug}`, { token, body: { q: 'cluster' } })

describe('uncovered paths on a 3-master Redis Cluster', () => {
  test('the app runs on the cluster client', () => {
    expect(t.s.ctx.redis).toBeInstanceOf(Cluster)
  })

  test('console session: sign in, read pages, then a rotated owner token ends the session', async () => {
    for (const a of await onEveryMaster()) {
      const c = new ConsoleClient(t)
      const signin = await c.signIn(a.token)
      expect([303, 302, 200]).toContain(signin.status)
      const page = await c.get('/console')
      expect(page.status, page.text.slice(0, 300)).toBe(200)
      expect((await c.get('/console/activity')).status).toBe(200)
      const rot = await t.req('POST', '/v1/token/rotate', { token: a.token })
      expect(rot.status, rot.text).toBe(200)
      const after = await c.get('/console')
      expect(after.status).not.toBe(200)
      expect((await t.req('GET', '/v1/balance', { token: rot.body.token })).status).toBe(200)
      expect((await t.req('GET', '/v1/balance', { token: a.token })).status).toBe(401)
    }
  })

  test('recovery link by e-mail: claim-link.lua rotates the owner token once', async () => {
    for (const a of await onEveryMaster()) {
      const email = (await t.s.ctx.redis.hget(t.s.ctx.keys.account(a.account_id), 'email'))!
      expect((await t.req('POST', '/v1/token/rotate', { body: { email } })).status).toBe(202)
      await t.s.mailer.idle()
      const mail = readMails(t).filter((m) => m.to === email).at(-1)!
      const link = /(http:\/\/pab\.test\/rotate\?code=[A-Za-z0-9_-]{43})/.exec(mail.text)![1]!
      const code = new URL(link).searchParams.get('code')!
      expect((await get(t, pathOf(link))).status).toBe(200)
      const page = await postForm(t, '/rotate', { code })
      expect(page.status, page.text.slice(0, 300)).toBe(200)
      const token = /(sk_[A-Za-z0-9_-]+)/.exec(page.text)![1]!
      expect((await t.req('GET', '/v1/balance', { token })).status).toBe(200)
      expect((await t.req('GET', '/v1/balance', { token: a.token })).status).toBe(401)
      expect((await postForm(t, '/rotate', { code })).status).toBe(409)
    }
  })

  test('vault link: a key stored once, a byok call uses it', async () => {
    for (const a of await onEveryMaster()) {
      const code = await newLink(t, a.token)
      expect((await submitForm(t, code, 'sk-vaulted-0123456789')).status).toBe(200)
      expect((await submitForm(t, code, 'sk-vaulted-0123456789')).status).toBe(409)
      const r = await call(a.token, 'test.byok')
      expect(r.status, r.text).toBe(200)
      await assertLedger(t.s, [{ account: a.account_id, balance: 499 }])
    }
  })

  test('parked payment over the balance cap: listed over every master, approved once', async () => {
    const accounts = await onEveryMaster()
    const buy = async (token: string) => {
      const b = await t.req('GET', '/v1/balance', { token })
      return postForm(t, pathOf(b.body.links.packs[0].url), { card: GOOD_CARD }, { accept: 'application/json' })
    }
    for (const a of accounts) {
      expect((await buy(a.token)).status).toBe(200)
      expect((await buy(a.token)).body).toMatchObject({ error: 'BALANCE_CAP', parked: true })
    }
    const list = await t.req('GET', '/admin/parked', { token: ADMIN })
    expect(list.status).toBe(200)
    for (const a of accounts) {
      const mine = list.body.parked.filter((p: { account_id: string }) => p.account_id === a.account_id)
      expect(mine).toHaveLength(1)
      const ok = await t.req('POST', `/admin/parked/${mine[0].id}/approve`, { token: ADMIN })
      expect(ok.status, ok.text).toBe(200)
      expect(ok.body.balance).toBe(10500)
    }
    await assertLedger(t.s, accounts.map((a) => ({ account: a.account_id, balance: 10500 })))
  })

  test('dead letters on every master: listed, replayed (then flushed), discarded', async () => {
    const accounts = await onEveryMaster()
    const { keys, redis } = t.s.ctx
    await flushAll(t)
    const poison = (acct: string, tag: string) =>
      redis.xadd(keys.outbox(keys.shardOf(acct)), '*', 'kind', 'account', 'id', `${tag}:account`, 'acct', acct, 'email', `bad\u0000${tag}@example.com`, 'public_ref', `ref_${tag}`, 'origin', '', 'referrer', '', 'owner', 'x', 'at', String(Date.now()))
    for (const [i, a] of accounts.entries()) {
      await poison(a.account_id, `p${i}`)
      await poison(a.account_id, `q${i}`)
      // A good entry after the poison still gets through.
      expect((await call(a.token)).status).toBe(200)
    }
    await flushAll(t)
    const dl = await t.req('GET', '/admin/dead-letters', { token: ADMIN })
    expect(dl.status, dl.text).toBe(200)
    expect(dl.body.count).toBe(6)
    const ids = dl.body.dead_letters.map((d: { id: string }) => d.id) as string[]
    for (const id of ids.slice(0, 3)) expect((await t.req('DELETE', `/admin/dead-letters/${id}`, { token: ADMIN })).status).toBe(200)
    for (const id of ids.slice(3)) {
      const r = await t.req('POST', `/admin/dead-letters/${id}/replay`, { token: ADMIN })
      expect(r.status, r.text).toBe(200)
    }
    // Replayed poison is poison again: it goes back to the dead letters, not lost.
    await flushAll(t)
    expect((await t.req('GET', '/admin/dead-letters', { token: ADMIN })).body.count).toBe(3)
    await assertLedger(t.s, accounts.map((a) => ({ account: a.account_id, balance: 495 })))
  })

  test('the sweeper refunds abandoned calls of every master', async () => {
    const accounts = await onEveryMaster()
    for (const a of accounts) {
      const principal = (await t.s.guard.tokens.resolve(a.token))!
      const opened = await openPaidCall(t.s, { principal, target: 'test.echo', price: 7, unpriced: false })
      expect(opened.kind).toBe('debited')
    }
    for (const a of accounts) expect(await redisBalance(t, a.account_id)).toBe(493)
    t.clock.advance(3 * 3600 * 1000)
    expect(await t.s.sweeper.sweepOnce()).toBeGreaterThanOrEqual(3)
    for (const a of accounts) expect(await redisBalance(t, a.account_id)).toBe(500)
    await assertLedger(t.s, accounts.map((a) => ({ account: a.account_id, balance: 500 })))
  })

  test('recount-agents.lua: an account whose live-agent set is missing recounts on the next create', async () => {
    for (const a of await onEveryMaster()) {
      const x = await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'x' } })
      expect(x.status).toBe(201)
      const sub = await t.req('POST', '/v1/agents', { token: x.body.token, body: { name: 'sub', budget: 10 } })
      expect(sub.status, sub.text).toBe(201)
      await t.s.ctx.redis.del(t.s.ctx.keys.liveAgents(a.account_id))
      const y = await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'y' } })
      expect(y.status, y.text).toBe(201)
      expect(await t.s.ctx.redis.zcard(t.s.ctx.keys.liveAgents(a.account_id))).toBe(4)
    }
  })

  test('release-expired.lua: an expired sub-agent gives its carve back on the next create, on every master', async () => {
    for (const a of await onEveryMaster()) {
      const root = (await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'root', budget: 100 } })).body
      const brief = await t.req('POST', '/v1/agents', { token: root.token, body: { name: 'brief', budget: 80, ttl_s: 60 } })
      expect(brief.status, brief.text).toBe(201)
      t.clock.advance(60_000)
      const next = await t.req('POST', '/v1/agents', { token: root.token, body: { name: 'next', budget: 100 } })
      expect(next.status, next.text).toBe(201)
      expect(await t.s.ctx.redis.hget(t.s.ctx.keys.agent(a.account_id, brief.body.id), 'carve_freed')).toBe('1')
    }
  })

  test('statement and activity of accounts on every master', async () => {
    for (const a of await onEveryMaster()) {
      expect((await call(a.token)).status).toBe(200)
      const act = await t.req('GET', '/v1/activity', { token: a.token })
      expect(act.status).toBe(200)
      const st = await t.req('GET', '/v1/ledger', { token: a.token })
      expect([200, 404]).toContain(st.status)
    }
  })
  test('metered settles (settle.lua) of accounts on every master, several per shard, in one turn', async () => {
    const accounts = [...(await onEveryMaster()), ...(await onEveryMaster())]
    const opened = []
    for (const a of accounts) {
      const principal = (await t.s.guard.tokens.resolve(a.token))!
      for (let i = 0; i < 3; i++) opened.push({ a, call: await openMeteredCall(t.s, principal, { input: 1000, cachedInput: 500, output: 4000 }) })
    }
    // Every settle in the same turn: one settle.lua batch per shard, sent to each shard's master.
    const settled = await Promise.all(opened.map((o) => o.call.settle('ok', { usage: { tokens: { input: 1000, cached: 0, output: 1000 }, source: 'provider' } })))
    expect(settled).toHaveLength(opened.length)
    // 3 calls × (1000 × 1000 + 1000 × 4000) micro = 15 credits per account.
    await assertLedger(t.s, accounts.map((a) => ({ account: a.account_id, balance: 485 })))
  })
})
