/**
 * Sub-agents on a real 3-master Redis Cluster (docs/api.md §8): create-agent.lua, debit.lua (the caller
 * and three ancestors through KEYS), refund.lua, agent-state.lua and set-policy.lua all stay in the
 * account's slot; siblings racing for the root's last credits never cross its budget; the ledger
 * holds after the flush.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Cluster } from 'ioredis'
import { startTestApp, type TestApp } from '../helpers/harness'
import { assertLedger } from '../helpers/invariants'
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

const create = (token: string, body: Record<string, unknown>) => t.req('POST', '/v1/agents', { token, body })
const call = (token: string, slug = 'test.echo') => t.req('POST', `/v1/call/${slug}`, { token, body: { q: 'x' } })

describe('sub-agents on a 3-master Redis Cluster', () => {
  test('a depth-4 chain spends, refunds and stops through its ancestors; racing siblings never cross the budget', async () => {
    expect(t.s.ctx.redis).toBeInstanceOf(Cluster)
    const accounts: string[] = []
    // Accounts of several shards, so the scripts run on more than one master.
    for (let i = 0; i < 3; i++) {
      const owner = await t.signup()
      accounts.push(owner.account_id)
      const root = (await create(owner.token, { name: 'root', budget: 100 })).body
      let parent = root
      const chain = [root]
      for (const depth of [2, 3, 4]) {
        const r = await create(parent.token, { name: `d${depth}`, budget: 20 - depth })
        expect(r.status, r.text).toBe(201)
        parent = r.body
        chain.push(parent)
      }
      const leaf = parent
      expect((await call(leaf.token)).status).toBe(200)
      expect((await call(leaf.token, 'test.fail')).body.error).toBe('PROVIDER_ERROR')
      const put = await t.req('PUT', '/v1/policies', { token: owner.token, body: { agents: { [chain[2]!.id]: { budget: 9 } } } })
      expect(put.status, put.text).toBe(200)
      const listed = Object.fromEntries(((await t.req('GET', '/v1/agents', { token: owner.token })).body.agents as { id: string; spent_total: number }[]).map((a) => [a.id, a.spent_total]))
      expect(chain.map((a) => listed[a.id])).toEqual([5, 5, 5, 5])

      // The root has 100 − 5 spent − 13 still held by d2 = 82 to carve: two siblings take it all,
      // then the root spends 20 itself, so only 75 are left for their 82 of carves (a carve bounds,
      // it does not reserve): the root's budget, not the siblings', is what stops the race.
      const sibs = [(await create(root.token, { name: 's1', budget: 41 })).body, (await create(root.token, { name: 's2', budget: 41 })).body]
      expect(sibs.every((s) => s.token)).toBe(true)
      expect((await create(root.token, { name: 's3', budget: 1 })).body.rule).toBe('exceeds_parent')
      for (let k = 0; k < 4; k++) expect((await call(root.token)).status).toBe(200)
      const answers = await Promise.all(Array.from({ length: 24 }, (_, k) => call(sibs[k % 2]!.token)))
      const ok = answers.filter((a) => a.status === 200).length
      expect(ok).toBe(15)
      for (const a of answers.filter((x) => x.status !== 200)) expect(a.body.rule).toBe('agent_budget')
      const after = Object.fromEntries(((await t.req('GET', '/v1/agents', { token: owner.token })).body.agents as { id: string; spent_total: number }[]).map((a) => [a.id, a.spent_total]))
      expect(after[root.id]).toBe(100)
      expect(after[sibs[0]!.id]! + after[sibs[1]!.id]!).toBe(75)

      await t.req('POST', `/v1/agents/${chain[1]!.id}/kill`, { token: root.token })
      expect((await call(leaf.token)).body).toMatchObject({ error: 'AGENT_KILLED', by_ancestor: chain[1]!.id })
      expect((await call(root.token)).body.rule).toBe('agent_budget')
    }
    await assertLedger(t.s, accounts.map((account) => ({ account })))
  })
})
