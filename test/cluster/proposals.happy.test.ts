/**
 * Proposals on a real 3-master Redis Cluster: propose.lua and decide-proposal.lua touch only keys of
 * the account's shard slot (proposals hash, pending index, account and agent hashes, outbox), so
 * filing, the limit, racing decisions, policy approvals and a top-up all run unchanged there.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Cluster } from 'ioredis'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll, redisBalance } from '../helpers/ledger'
import { consentSandbox } from '../helpers/money'
import { startRedisCluster, type RedisCluster } from './cluster'

let cluster: RedisCluster
let t: TestApp
beforeAll(async () => {
  cluster = await startRedisCluster(3)
  t = await startTestApp({ env: { REDIS_CLUSTER_NODES: cluster.nodes } })
})
afterAll(async () => {
  await t?.close()
  await cluster?.stop()
})

describe('proposals on a 3-master Redis Cluster', () => {
  test('propose, limit, racing decisions, cap / allow / top-up approvals, expiry, flush', async () => {
    expect(t.s.ctx.redis).toBeInstanceOf(Cluster)
    // Accounts land on several shards, so several masters run the scripts.
    for (let n = 0; n < 3; n++) {
      const o = await t.signup()
      await consentSandbox(t, o.token, { threshold: 100, refill: 2000, ceiling: 20000 })
      const a = (await t.req('POST', '/v1/agents', { token: o.token, body: { name: 'a', daily_cap: 5, allowlist: ['test.echo'] } })).body
      const call = (slug = 'test.echo') => t.req('POST', `/v1/call/${slug}`, { token: a.token, body: { q: `${Math.random()}` } })
      const propose = (kind: string, value: number | string) => t.req('POST', '/v1/proposals', { token: a.token, body: { kind, value, reason: `need ${kind}` } })

      const capP = (await propose('raise_daily_cap', 30)).body
      const rs = await Promise.all(Array.from({ length: 20 }, (_, i) => t.req('POST', `/v1/proposals/${capP.id}/${i % 2 ? 'decline' : 'approve'}`, { token: o.token })))
      expect(rs.filter((r) => r.status === 200)).toHaveLength(1)
      expect(rs.filter((r) => r.status === 409)).toHaveLength(19)
      const capped = (await t.req('GET', '/v1/policies', { token: o.token })).body.agents[a.id].daily_cap
      expect(capped).toBe(rs.find((r) => r.status === 200)!.body.status === 'approved' ? 30 : 5)

      const allowP = (await propose('allow', 'test.cheap')).body
      expect((await call('test.cheap')).body.rule).toBe('agent_allowlist')
      expect((await t.req('POST', `/v1/proposals/${allowP.id}/approve`, { token: o.token })).body.status).toBe('approved')
      expect((await call('test.cheap')).status).toBe(200)

      const topP = (await propose('topup', 2000)).body
      const before = await redisBalance(t, o.account_id)
      expect((await t.req('POST', `/v1/proposals/${topP.id}/approve`, { token: o.token })).body.status).toBe('approved')
      expect(await redisBalance(t, o.account_id)).toBe(before + 2000)

      for (let i = 0; i < 10; i++) expect((await propose('raise_daily_cap', 100 + i)).status).toBe(201)
      expect((await propose('raise_daily_cap', 1)).status).toBe(429)
      t.clock.advance(24 * 3600 * 1000)
      // The expiry sweep of propose.lua frees the slots.
      expect((await propose('raise_daily_cap', 1)).status).toBe(201)
      expect((await t.req('GET', '/v1/proposals?status=expired', { token: o.token })).body.proposals).toHaveLength(10)
    }
    await flushAll(t)
    const rows = await t.s.db.db.execute('select status, count(*)::int as n from proposals group by status order by status')
    const byStatus = Object.fromEntries(((Array.isArray(rows) ? rows : (rows as { rows: unknown[] }).rows) as { status: string; n: number }[]).map((r) => [r.status, r.n]))
    expect(byStatus.expired).toBe(30)
    expect(byStatus.pending).toBe(3)
  })
})
