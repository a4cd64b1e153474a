/**
 * Sub-agent visibility (docs/api.md §8): an agent sees and moves only its own descendants. Its parent,
 * a sibling, itself, another account's agents and made-up ids all answer NOT_FOUND and stay as
 * they were; revive is the operator's alone; a stopped subtree grows no new branches; no agent can
 * use the account's agent limit up for good (it counts live agents: a revoke frees a subtree). An
 * agent's activity is its own subtree's calls: its parent's, a sibling's and the owner token's are
 * not listed, and their call records answer NOT_FOUND.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { MAX_AGENTS } from '../../src/governance/agents'
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

describe('sub-agent visibility', () => {
  test("an agent cannot see or touch its parent, a sibling, itself, or another account's agents (NOT_FOUND)", async () => {
    const owner = await t.signup()
    const root = (await create(owner.token, { name: 'root', budget: 1000 })).body
    const me = (await create(root.token, { name: 'me', budget: 100 })).body
    const sibling = (await create(root.token, { name: 'sibling', budget: 100 })).body
    const nephew = (await create(sibling.token, { name: 'nephew', budget: 10 })).body
    const other = await t.signup()
    const stranger = (await create(other.token, { name: 'stranger', budget: 100 })).body

    for (const target of [root.id, sibling.id, nephew.id, me.id, stranger.id, 'agt_AAAAAAAAAAAAAAAAAAAAAA', 'not-an-id']) {
      for (const [method, path] of [
        ['POST', `/v1/agents/${target}/kill`],
        ['DELETE', `/v1/agents/${target}`],
      ] as const) {
        const r = await t.req(method, path, { token: me.token })
        expect([path, r.status, r.body.error]).toEqual([path, 404, 'NOT_FOUND'])
      }
    }
    // Listing shows none of them; nothing moved.
    expect((await t.req('GET', '/v1/agents', { token: me.token })).body.agents).toEqual([])
    for (const a of [root, me, sibling, nephew]) expect((await t.req('POST', '/v1/call/test.cheap', { token: a.token, body: {} })).status).toBe(200)
    expect((await t.req('POST', '/v1/call/test.cheap', { token: stranger.token, body: {} })).status).toBe(200)
    // Another account's operator cannot reach them either.
    expect((await t.req('POST', `/v1/agents/${me.id}/kill`, { token: other.token })).status).toBe(404)
  })

  test('revive is the operator\'s: FORBIDDEN for any agent token, even on its own descendant', async () => {
    const owner = await t.signup()
    const root = (await create(owner.token, { name: 'root', budget: 100 })).body
    const child = (await create(root.token, { name: 'c', budget: 10 })).body
    expect((await t.req('POST', `/v1/agents/${child.id}/kill`, { token: root.token })).body.state).toBe('killed')
    const r = await t.req('POST', `/v1/agents/${child.id}/revive`, { token: root.token })
    expect([r.status, r.body.error]).toEqual([403, 'FORBIDDEN'])
    expect((await t.req('POST', '/v1/call/test.cheap', { token: child.token, body: {} })).body.error).toBe('AGENT_KILLED')
  })

  test('a stopped subtree creates nothing: a killed ancestor refuses its descendants\' new children', async () => {
    const owner = await t.signup()
    const root = (await create(owner.token, { name: 'root', budget: 100 })).body
    const child = (await create(root.token, { name: 'c', budget: 50 })).body
    await t.req('POST', `/v1/agents/${root.id}/kill`, { token: owner.token })
    const r = await create(child.token, { name: 'g', budget: 5 })
    expect(r.status).toBe(403)
    expect(r.body).toMatchObject({ error: 'AGENT_KILLED', by_ancestor: root.id })
    expect((await t.req('GET', '/v1/agents', { token: owner.token })).body.agents).toHaveLength(2)
  })

  test('an agent cannot change policies, nor raise its own budget', async () => {
    const owner = await t.signup()
    const root = (await create(owner.token, { name: 'root', budget: 10 })).body
    const r = await t.req('PUT', '/v1/policies', { token: root.token, body: { agents: { [root.id]: { budget: 1000 } } } })
    expect([r.status, r.body.error]).toEqual([403, 'FORBIDDEN'])
    expect((await t.req('GET', '/v1/policies', { token: owner.token })).body.agents[root.id].budget).toBe(10)
  })
})

describe('the agent limit', () => {
  test('it counts live agents: an agent filling it with zero-budget children holds the operator off only until they are revoked', async () => {
    const owner = await t.signup()
    const rogue = (await create(owner.token, { name: 'rogue', budget: 0 })).body
    const ids: string[] = []
    for (let i = 0; i < MAX_AGENTS - 1; i += 50) {
      const rs = await Promise.all(Array.from({ length: Math.min(50, MAX_AGENTS - 1 - i) }, (_, j) => create(rogue.token, { name: `spam${i + j}`, budget: 0 })))
      for (const r of rs) {
        expect(r.status).toBe(201)
        ids.push(r.body.id)
      }
    }
    // The limit holds: 1000 live agents.
    const full = await create(owner.token, { name: 'legit' })
    expect([full.status, full.body.error]).toEqual([409, 'CONFLICT'])
    // A revoke frees its place (here the rogue's own, of one child)...
    expect((await t.req('DELETE', `/v1/agents/${ids[0]}`, { token: rogue.token })).body.state).toBe('revoked')
    expect((await create(owner.token, { name: 'legit' })).status).toBe(201)
    expect((await create(owner.token, { name: 'legit2' })).status).toBe(409)
    // ...and revoking the rogue frees its whole subtree: the operator creates again.
    await t.req('DELETE', `/v1/agents/${rogue.id}`, { token: owner.token })
    const mine = await create(owner.token, { name: 'legit2' })
    expect(mine.status).toBe(201)
    // Every agent stays listed, revoked ones too.
    expect((await t.req('GET', '/v1/agents', { token: owner.token })).body.agents).toHaveLength(MAX_AGENTS + 2)
  }, 60_000)
})

describe('sub-agent activity', () => {
  test("an agent lists its own and its descendants' calls only, from Redis and from Postgres alike; other calls' records are NOT_FOUND to it", async () => {
    const owner = await t.signup()
    const root = (await create(owner.token, { name: 'root', budget: 1000 })).body
    const me = (await create(root.token, { name: 'me', budget: 100 })).body
    const child = (await create(me.token, { name: 'child', budget: 10 })).body
    const sibling = (await create(root.token, { name: 'sibling', budget: 100 })).body
    const callBy = async (token: string) => (await t.req('POST', '/v1/call/test.echo', { token, body: { q: 'x' } })).body.call_id as string
    const ids = { owner: await callBy(owner.token), root: await callBy(root.token), me: await callBy(me.token), child: await callBy(child.token), sibling: await callBy(sibling.token) }
    const seen = async (token: string) => ((await t.req('GET', '/v1/activity', { token })).body.calls as { call_id: string }[]).map((c) => c.call_id).sort()
    const check = async () => {
      expect(await seen(owner.token)).toEqual(Object.values(ids).sort())
      expect(await seen(root.token)).toEqual([ids.root, ids.me, ids.child, ids.sibling].sort())
      expect(await seen(me.token)).toEqual([ids.me, ids.child].sort())
      expect(await seen(child.token)).toEqual([ids.child])
      for (const other of [ids.owner, ids.root, ids.sibling]) {
        const r = await t.req('GET', `/v1/activity/${other}`, { token: me.token })
        expect([other, r.status, r.body.error]).toEqual([other, 404, 'NOT_FOUND'])
      }
      expect((await t.req('GET', `/v1/activity/${ids.child}`, { token: me.token })).status).toBe(200)
    }
    await check()
    // The same once the calls have left Redis' recent list for Postgres.
    await flushAll(t)
    await t.redis.del(t.s.ctx.keys.recentCalls(owner.account_id))
    await check()
  })
})
