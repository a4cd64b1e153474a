import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { accountPolicies, agents } from '../../src/db/schema'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

async function ownerWithAgents(n: number) {
  const owner = await t.signup()
  const list: { id: string; token: string }[] = []
  for (let i = 0; i < n; i++) list.push((await t.req('POST', '/v1/agents', { token: owner.token, body: { name: `a${i}` } })).body)
  return { owner, agents: list }
}

// The runaway-agent breaker as the harness configures it (generous defaults; test/http/breaker.*).
const BRK = { credits_per_minute: 1000000, identical_per_minute: 1000000 }
// An operator's agent as the tree sees it (docs/api.md §8): top level, no budget, nothing spent, no expiry.
const TREE = { budget: null, spent_total: 0, parent_id: null, depth: 1, expires_at: null }

describe('policies', () => {
  test('GET: the account defaults and every agent, exactly the documented shape (docs/api.md §5)', async () => {
    const { owner, agents: [a] } = await ownerWithAgents(1)
    const r = await t.req('GET', '/v1/policies', { token: owner.token })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({
      account: { daily_cap: 20000, balance_cap: 100000, allowlist: null, thresholds: [50, 80, 100] },
      agents: { [a!.id]: { daily_cap: null, allowlist: null, per_call_max: null, breaker: BRK, ...TREE } },
    })
  })

  test('PUT changes only what it names and answers the full policies; null restores the default', async () => {
    const { owner, agents: [a, b] } = await ownerWithAgents(2)
    const r = await t.req('PUT', '/v1/policies', {
      token: owner.token,
      body: { account: { daily_cap: 300, allowlist: ['test.*', 'proxy:fake'] }, agents: { [a!.id]: { daily_cap: 40, per_call_max: 5, allowlist: ['test.echo', 'test.echo'] } } },
    })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({
      account: { daily_cap: 300, balance_cap: 100000, allowlist: ['test.*', 'proxy:fake'], thresholds: [50, 80, 100] },
      agents: {
        [a!.id]: { daily_cap: 40, allowlist: ['test.echo'], per_call_max: 5, breaker: BRK, ...TREE },
        [b!.id]: { daily_cap: null, allowlist: null, per_call_max: null, breaker: BRK, ...TREE },
      },
    })
    const again = await t.req('PUT', '/v1/policies', { token: owner.token, body: { account: { daily_cap: null }, agents: { [a!.id]: { per_call_max: null } } } })
    expect(again.body.account).toEqual({ daily_cap: 20000, balance_cap: 100000, allowlist: ['test.*', 'proxy:fake'], thresholds: [50, 80, 100] })
    expect(again.body.agents[a!.id]).toEqual({ daily_cap: 40, allowlist: ['test.echo'], per_call_max: null, breaker: BRK, ...TREE })
    expect((await t.req('GET', '/v1/policies', { token: owner.token })).body).toEqual(again.body)
    expect((await t.req('GET', '/v1/balance', { token: owner.token })).body.daily_cap).toBe(20000)
    // An empty PUT changes nothing and still answers the policies.
    expect((await t.req('PUT', '/v1/policies', { token: owner.token, body: {} })).body).toEqual(again.body)
  })

  test('a change holds from the very next call: allowlists let through exactly what they match', async () => {
    const { owner, agents: [a] } = await ownerWithAgents(1)
    const call = (slug: string) => t.req('POST', `/v1/call/${slug}`, { token: a!.token, body: { q: 'x' } })
    expect((await call('test.search')).status).toBe(200)
    await t.req('PUT', '/v1/policies', { token: owner.token, body: { agents: { [a!.id]: { allowlist: ['test.e*'] } } } })
    expect((await call('test.echo')).status).toBe(200)
    expect((await call('test.search')).body.rule).toBe('agent_allowlist')
    await t.req('PUT', '/v1/policies', { token: owner.token, body: { agents: { [a!.id]: { allowlist: null } } } })
    expect((await call('test.search')).status).toBe(200)
  })

  test('an agent token reads only its own agent policy', async () => {
    const { owner, agents: [a, b] } = await ownerWithAgents(2)
    await t.req('PUT', '/v1/policies', { token: owner.token, body: { agents: { [a!.id]: { daily_cap: 9 } } } })
    const r = await t.req('GET', '/v1/policies', { token: a!.token })
    expect(r.status).toBe(200)
    expect(r.body.agents).toEqual({ [a!.id]: { daily_cap: 9, allowlist: null, per_call_max: null, breaker: BRK, ...TREE } })
    expect(JSON.stringify(r.body)).not.toContain(b!.id)
  })

  test('revoked agents leave the policies', async () => {
    const { owner, agents: [a, b] } = await ownerWithAgents(2)
    await t.req('DELETE', `/v1/agents/${a!.id}`, { token: owner.token })
    expect(Object.keys((await t.req('GET', '/v1/policies', { token: owner.token })).body.agents)).toEqual([b!.id])
  })

  test('Postgres mirrors the account policy and agent policies after the flush', async () => {
    const { owner, agents: [a] } = await ownerWithAgents(1)
    await t.req('PUT', '/v1/policies', { token: owner.token, body: { account: { daily_cap: 77, allowlist: [] }, agents: { [a!.id]: { per_call_max: 3 } } } })
    await t.req('PUT', '/v1/policies', { token: owner.token, body: { account: { daily_cap: 78 } } })
    await flushAll(t)
    const [pol] = await t.s.db.db.select().from(accountPolicies).where(eq(accountPolicies.accountId, owner.account_id))
    expect(pol).toMatchObject({ dailyCap: 78, allowlist: [], balanceCap: 100000, version: 2 })
    const [row] = await t.s.db.db.select().from(agents).where(eq(agents.id, a!.id))
    expect(row).toMatchObject({ perCallMax: 3, version: 2 })
  })
})
