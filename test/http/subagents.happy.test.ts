/**
 * Agent budgets and sub-agents (docs/api.md §8) through HTTP: a tree of agents, each spending into
 * every ancestor's spent_total and daily spend; budgets carved from what a parent has left; limits
 * no wider than the parent's; a kill stopping the subtree at once; expiry by the test clock.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

const create = (token: string, body: Record<string, unknown>) => t.req('POST', '/v1/agents', { token, body })
const call = (token: string, slug = 'test.echo') => t.req('POST', `/v1/call/${slug}`, { token, body: { q: 'x' } })
// The operator's listing by id (typed loosely: the tests read the fields they check).
const listed = async (owner: string): Promise<Record<string, any>> =>
  Object.fromEntries(((await t.req('GET', '/v1/agents', { token: owner })).body.agents as { id: string }[]).map((a) => [a.id, a]))

describe('sub-agents', () => {
  test("a 3-level tree: the grandchild's spend moves every ancestor's spent_total and daily spend", async () => {
    const owner = await t.signup()
    const root = await create(owner.token, { name: 'orchestrator', budget: 300 })
    expect(root.status).toBe(201)
    expect(root.body).toMatchObject({ parent_id: null, depth: 1, budget: 300, expires_at: null })
    const child = await create(root.body.token, { name: 'worker', budget: 100 })
    expect(child.status).toBe(201)
    expect(child.body).toMatchObject({ parent_id: root.body.id, depth: 2, budget: 100, state: 'active' })
    expect(child.body.token).toMatch(/^ak_[A-Za-z0-9_-]{43}$/)
    const grand = await create(child.body.token, { name: 'helper', budget: 40 })
    expect(grand.body).toMatchObject({ parent_id: child.body.id, depth: 3, budget: 40 })

    expect((await call(grand.body.token)).status).toBe(200) // 5 credits
    expect((await call(child.body.token)).status).toBe(200) // 5 more on the child and the root

    const all = await listed(owner.token)
    expect(all[grand.body.id]).toMatchObject({ spent_total: 5, spent_today: 5 })
    expect(all[child.body.id]).toMatchObject({ spent_total: 10, spent_today: 10 })
    expect(all[root.body.id]).toMatchObject({ spent_total: 10, spent_today: 10 })
    // The operator's policies show the same tree.
    const pol = (await t.req('GET', '/v1/policies', { token: owner.token })).body.agents
    expect(pol[grand.body.id]).toMatchObject({ budget: 40, spent_total: 5, parent_id: child.body.id, depth: 3 })

    // A refunded call gives the spend back along the whole chain.
    expect((await call(grand.body.token, 'test.fail')).body.error).toBe('PROVIDER_ERROR')
    const after = await listed(owner.token)
    expect([after[grand.body.id].spent_total, after[child.body.id].spent_total, after[root.body.id].spent_total]).toEqual([5, 10, 10])
    expect([after[grand.body.id].spent_today, after[child.body.id].spent_today, after[root.body.id].spent_today]).toEqual([5, 10, 10])
  })

  test('a budget: the call past it is POLICY_DENIED agent_budget, also when an ancestor runs out', async () => {
    const owner = await t.signup()
    const root = (await create(owner.token, { name: 'root', budget: 12 })).body
    const child = (await create(root.token, { name: 'c', budget: 12 })).body
    expect((await call(child.token)).status).toBe(200)
    expect((await call(root.token)).status).toBe(200)
    // The root has 2 left: the child's own budget (7 left) is not what stops it.
    const denied = await call(child.token)
    expect(denied.status).toBe(403)
    expect(denied.body).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_budget', budget: 12, spent_total: 10, by_ancestor: root.id })
    const own = await call(root.token)
    expect(own.body).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_budget', budget: 12, spent_total: 10 })
    expect(own.body.by_ancestor).toBeUndefined()
    // The operator raises it through the policy path: the next call goes through.
    const put = await t.req('PUT', '/v1/policies', { token: owner.token, body: { agents: { [root.id]: { budget: 100 } } } })
    expect(put.body.agents[root.id]).toMatchObject({ budget: 100, spent_total: 10 })
    expect((await call(child.token)).status).toBe(200)
  })

  test('a budget carved from a parent cannot exceed what the parent has left', async () => {
    const owner = await t.signup()
    const root = (await create(owner.token, { name: 'root', budget: 100 })).body
    expect((await call(root.token)).status).toBe(200) // 95 left
    const a = await create(root.token, { name: 'a', budget: 60 })
    expect(a.status).toBe(201) // 35 left to carve
    const tooMuch = await create(root.token, { name: 'b', budget: 36 })
    expect(tooMuch.status).toBe(403)
    expect(tooMuch.body).toMatchObject({ error: 'POLICY_DENIED', rule: 'exceeds_parent', field: 'budget', limit: 35 })
    expect((await create(root.token, { name: 'b', budget: 35 })).status).toBe(201)
    expect((await create(root.token, { name: 'c', budget: 1 })).body.rule).toBe('exceeds_parent')
    // What a child spends stays inside its carve: the parent has no more to carve than before.
    expect((await call(a.body.token)).status).toBe(200)
    expect((await create(root.token, { name: 'c', budget: 1 })).body.rule).toBe('exceeds_parent')
    // Revoking a child gives its unspent carve (60 - 5) back to the parent.
    expect((await t.req('DELETE', `/v1/agents/${a.body.id}`, { token: root.token })).body.state).toBe('revoked')
    expect((await create(root.token, { name: 'd', budget: 55 })).status).toBe(201)
    expect((await create(root.token, { name: 'e', budget: 1 })).body.rule).toBe('exceeds_parent')
    // A sub-agent must have a budget.
    expect((await create(root.token, { name: 'f' })).body).toMatchObject({ error: 'BAD_REQUEST', field: 'budget' })
  })

  test("limits no wider than the parent's: allowlist, daily_cap, per_call_max → exceeds_parent; depth ≤ 4 → max_depth", async () => {
    const owner = await t.signup()
    const root = (await create(owner.token, { name: 'root', budget: 1000, allowlist: ['test.echo', 'test.c*'], daily_cap: 50, per_call_max: 10 })).body
    const wide = await create(root.token, { name: 'w', budget: 10, allowlist: ['test.*'] })
    expect(wide.status).toBe(403)
    expect(wide.body).toMatchObject({ error: 'POLICY_DENIED', rule: 'exceeds_parent', field: 'allowlist', limit: 'test.*' })
    expect((await create(root.token, { name: 'w', budget: 10, daily_cap: 51 })).body).toMatchObject({ rule: 'exceeds_parent', field: 'daily_cap', limit: 50 })
    expect((await create(root.token, { name: 'w', budget: 10, per_call_max: 11 })).body).toMatchObject({ rule: 'exceeds_parent', field: 'per_call_max', limit: 10 })
    const narrow = await create(root.token, { name: 'n', budget: 10, allowlist: ['test.cheap', 'test.ch*'], daily_cap: 50, per_call_max: 10 })
    expect(narrow.status).toBe(201)
    // A child with no allowlist of its own is still held to its parent's (checked up the chain).
    const free = (await create(root.token, { name: 'f', budget: 100 })).body
    expect((await call(free.token, 'test.search')).body).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_allowlist', by_ancestor: root.id })
    expect((await call(free.token, 'test.cheap')).status).toBe(200)

    // Depth: the operator's agent is 1; a depth-4 agent can be created and call, a 5th level cannot.
    let parent = free
    for (const depth of [3, 4]) {
      const r = await create(parent.token, { name: `d${depth}`, budget: 20 })
      expect(r.status).toBe(201)
      expect(r.body.depth).toBe(depth)
      parent = r.body
    }
    expect((await call(parent.token, 'test.cheap')).status).toBe(200)
    const deep = await create(parent.token, { name: 'd5', budget: 1 })
    expect(deep.status).toBe(403)
    expect(deep.body).toMatchObject({ error: 'POLICY_DENIED', rule: 'max_depth', max_depth: 4 })
  })

  test("limits no wider than what the parent may use: a parent with none of its own is held to its ancestors', and so are the children it creates", async () => {
    const owner = await t.signup()
    const root = (await create(owner.token, { name: 'root', budget: 1000, allowlist: ['test.echo'], daily_cap: 50, per_call_max: 5 })).body
    // mid omits its own limits: it is held to root's through the chain.
    const mid = (await create(root.token, { name: 'mid', budget: 500 })).body
    expect((await call(mid.token, 'test.pricey')).body).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_allowlist', by_ancestor: root.id })
    // So mid cannot hand out what it does not have (the limit reported is the chain's).
    const wide = await create(mid.token, { name: 'leaf', budget: 10, allowlist: ['test.pricey'] })
    expect(wide.status).toBe(403)
    expect(wide.body).toMatchObject({ error: 'POLICY_DENIED', rule: 'exceeds_parent', field: 'allowlist', limit: 'test.pricey', parent_id: mid.id })
    expect((await create(mid.token, { name: 'leaf2', budget: 10, daily_cap: 100000 })).body).toMatchObject({ error: 'POLICY_DENIED', rule: 'exceeds_parent', field: 'daily_cap', limit: 50 })
    expect((await create(mid.token, { name: 'leaf3', budget: 10, per_call_max: 1000 })).body).toMatchObject({ error: 'POLICY_DENIED', rule: 'exceeds_parent', field: 'per_call_max', limit: 5 })
    // Within the chain's limits it may.
    expect((await create(mid.token, { name: 'leaf4', budget: 10, allowlist: ['test.echo'], daily_cap: 50, per_call_max: 5 })).status).toBe(201)
  })

  test('killing the middle agent stops the grandchild at once (by_ancestor) and not the sibling subtree; only the operator revives', async () => {
    const owner = await t.signup()
    const root = (await create(owner.token, { name: 'root', budget: 1000 })).body
    const mid = (await create(root.token, { name: 'mid', budget: 200 })).body
    const sib = (await create(root.token, { name: 'sib', budget: 200 })).body
    const grand = (await create(mid.token, { name: 'grand', budget: 50 })).body
    const sibChild = (await create(sib.token, { name: 'sib-child', budget: 50 })).body

    const killed = await t.req('POST', `/v1/agents/${mid.id}/kill`, { token: root.token })
    expect(killed.status).toBe(200)
    expect(killed.body).toMatchObject({ id: mid.id, state: 'killed', parent_id: root.id })
    const stopped = await call(grand.token)
    expect(stopped.status).toBe(403)
    expect(stopped.body).toMatchObject({ error: 'AGENT_KILLED', agent_id: grand.id, by_ancestor: mid.id })
    // The grandchild itself was not written: it is still active, stopped only through its chain.
    expect((await listed(owner.token))[grand.id].state).toBe('active')
    // Reads and governance stop too (authorize.lua walks the same chain), naming the killed ancestor.
    const read = await t.req('GET', '/v1/balance', { token: grand.token })
    expect(read.status).toBe(403)
    expect(read.body).toMatchObject({ error: 'AGENT_KILLED', by_ancestor: mid.id })
    expect((await t.req('GET', '/v1/agents', { token: grand.token })).body).toMatchObject({ error: 'AGENT_KILLED', by_ancestor: mid.id })
    expect((await t.req('GET', '/v1/balance', { token: sibChild.token })).status).toBe(200)
    expect((await call(sibChild.token)).status).toBe(200)
    expect((await call(sib.token)).status).toBe(200)

    // The killer cannot revive (FORBIDDEN); the operator can, and the subtree works again.
    expect((await t.req('POST', `/v1/agents/${mid.id}/revive`, { token: root.token })).body.error).toBe('FORBIDDEN')
    expect((await t.req('POST', `/v1/agents/${mid.id}/revive`, { token: owner.token })).body.state).toBe('active')
    expect((await call(grand.token)).status).toBe(200)

    // Revoking the root stops every descendant with AGENT_REVOKED naming it.
    await t.req('DELETE', `/v1/agents/${root.id}`, { token: owner.token })
    for (const a of [mid, sib, grand, sibChild]) {
      expect((await call(a.token)).body).toMatchObject({ error: 'AGENT_REVOKED', by_ancestor: root.id })
      expect((await t.req('GET', '/v1/activity', { token: a.token })).body).toMatchObject({ error: 'AGENT_REVOKED', by_ancestor: root.id })
    }
  })

  test('expiry: past expires_at (the test clock) the token answers AGENT_REVOKED reason expired, and so do its descendants', async () => {
    const owner = await t.signup()
    const root = (await create(owner.token, { name: 'root', budget: 1000 })).body
    const temp = await create(root.token, { name: 'temp', budget: 100, ttl_s: 60 })
    expect(temp.body.expires_at).toBe(new Date(t.clock.now() + 60_000).toISOString())
    // A child never outlives its parent: a longer TTL (or none) is clamped to the parent's.
    const kid = await create(temp.body.token, { name: 'kid', budget: 10, ttl_s: 3600 })
    expect(kid.body.expires_at).toBe(temp.body.expires_at)
    expect((await call(kid.body.token)).status).toBe(200)

    t.clock.advance(60_000)
    expect((await call(temp.body.token)).body).toMatchObject({ error: 'AGENT_REVOKED', reason: 'expired' })
    expect((await call(kid.body.token)).body).toMatchObject({ error: 'AGENT_REVOKED', reason: 'expired' })
    expect((await t.req('GET', '/v1/balance', { token: temp.body.token })).body).toMatchObject({ error: 'AGENT_REVOKED', reason: 'expired' })
    // The child's own TTL is clamped to its parent's; an ancestor's expiry alone stops reads too.
    expect((await t.req('GET', '/v1/balance', { token: kid.body.token })).body).toMatchObject({ error: 'AGENT_REVOKED', reason: 'expired' })
    expect((await call(root.token)).status).toBe(200)
  })

  test('an agent lists its own subtree; events name the parent', async () => {
    const owner = await t.signup()
    const root = (await create(owner.token, { name: 'root', budget: 1000 })).body
    const a = (await create(root.token, { name: 'a', budget: 10 })).body
    const b = (await create(a.token, { name: 'b', budget: 5 })).body
    const list = await t.req('GET', '/v1/agents', { token: root.token })
    expect(list.status).toBe(200)
    expect(list.body.agents.map((x: { id: string }) => x.id).sort()).toEqual([a.id, b.id].sort())
    expect((await t.req('GET', '/v1/agents', { token: a.token })).body.agents.map((x: { id: string }) => x.id)).toEqual([b.id])
    expect((await t.req('GET', '/v1/agents', { token: b.token })).body.agents).toEqual([])
    expect(Object.keys(await listed(owner.token)).sort()).toEqual([root.id, a.id, b.id].sort())

    await t.req('POST', `/v1/agents/${b.id}/kill`, { token: root.token })
    await flushAll(t)
    const feed = (await t.req('GET', '/v1/events', { token: owner.token })).body.events as { type: string; data: Record<string, unknown> }[]
    const created = feed.filter((e) => e.type === 'agent.created').map((e) => [e.data.agent_id, e.data.parent_id, e.data.depth])
    expect(created).toContainEqual([b.id, a.id, 3])
    expect(created).toContainEqual([root.id, null, 1])
    const kill = feed.find((e) => e.type === 'agent.killed')!
    expect(kill.data).toMatchObject({ agent_id: b.id, parent_id: a.id, by_agent: root.id })
  })
})
