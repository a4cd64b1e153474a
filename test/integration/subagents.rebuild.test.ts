/**
 * The agent tree comes back with the ledger rebuild (docs/api.md §8): after Redis loses the account,
 * its agents are restored with their parent chain, budget, expiry, spent_total (Σ of the subtree's
 * debits − refunds from the ledger, flushed or still in the outbox), today's subtree spend and the
 * parents' carves; the token mappings carry the chain again, and the budgets hold as before. The
 * live agents the agent limit counts are recounted from the restored hashes.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { hashToken } from '../../src/auth/tokens'
import { agents } from '../../src/db/schema'
import { restoreMissing } from '../../src/recovery/rebuild'
import { windowsAt } from '../../src/windows'
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

describe('ledger rebuild and sub-agents', () => {
  test('tree, budgets, spent_total, carves and chains are restored; the budgets hold after', async () => {
    const o = await t.signup()
    const root = (await create(o.token, { name: 'root', budget: 100 })).body
    const mid = (await create(root.token, { name: 'mid', budget: 50 })).body
    const grand = (await create(mid.token, { name: 'grand', budget: 20, ttl_s: 3600 })).body
    expect((await call(grand.token)).status).toBe(200)
    expect((await call(mid.token)).status).toBe(200)
    expect((await call(grand.token, 'test.fail')).body.error).toBe('PROVIDER_ERROR')
    await flushAll(t)
    // The projection in Postgres carries the tree.
    const [row] = await t.s.db.db.select().from(agents).where(eq(agents.id, grand.id))
    expect(row).toMatchObject({ parentId: mid.id, depth: 3, budget: 20, expiresAt: new Date(grand.expires_at) })
    // Only in the outbox: a newer debit and a newer agent version (a policy change).
    expect((await call(grand.token)).status).toBe(200)
    await t.req('PUT', '/v1/policies', { token: o.token, body: { agents: { [root.id]: { budget: 90 } } } })
    const before = (await t.req('GET', '/v1/agents', { token: o.token })).body.agents
    const carved = await t.redis.hget(t.s.ctx.keys.agent(o.account_id, root.id), 'carved')

    const { keys } = t.s.ctx
    const day = windowsAt(t.clock.now()).day
    const ids = [root.id, mid.id, grand.id]
    await t.redis.del(
      keys.account(o.account_id),
      keys.agents(o.account_id),
      ...ids.map((id) => keys.agent(o.account_id, id)),
      ...[root, mid, grand].map((a) => keys.token(hashToken(a.token))),
    )
    const summary = await restoreMissing(t.s.ctx, t.s.db.db)
    expect(summary.failed).toEqual([])

    const after = (await t.req('GET', '/v1/agents', { token: o.token })).body.agents
    expect(after).toEqual(before)
    const byId = Object.fromEntries(after.map((a: { id: string }) => [a.id, a]))
    expect([byId[root.id].spent_total, byId[mid.id].spent_total, byId[grand.id].spent_total]).toEqual([15, 15, 10])
    expect(byId[grand.id]).toMatchObject({ parent_id: mid.id, depth: 3, budget: 20, spent_today: 10, expires_at: grand.expires_at })
    expect(await t.redis.hget(keys.agent(o.account_id, root.id), 'carved')).toBe(carved)
    // Today's spend is back in the hashes (day, day_spent), as debit.lua keeps it.
    expect(await t.redis.hmget(keys.agent(o.account_id, grand.id), 'day', 'day_spent')).toEqual([String(day), '10'])
    expect(await t.redis.get(keys.token(hashToken(grand.token)))).toBe(`${o.account_id}|${grand.id}|${mid.id},${root.id}`)

    // The grandchild has 10 of its 20 left: two calls, then agent_budget; the chain still charges up.
    expect((await call(grand.token)).status).toBe(200)
    expect((await call(grand.token)).status).toBe(200)
    expect((await call(grand.token)).body).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_budget', budget: 20, spent_total: 20 })
    const last = Object.fromEntries((await t.req('GET', '/v1/agents', { token: o.token })).body.agents.map((a: { id: string; spent_total: number }) => [a.id, a.spent_total]))
    expect([last[root.id], last[mid.id], last[grand.id]]).toEqual([25, 25, 20])
    // Killing the middle still stops the grandchild through the restored chain.
    await t.req('POST', `/v1/agents/${mid.id}/kill`, { token: root.token })
    expect((await call(grand.token)).body).toMatchObject({ error: 'AGENT_KILLED', by_ancestor: mid.id })
  })

  test('the live agents the agent limit counts are recounted: a revoked subtree and an expired agent are not, a killed one is; an expired child carves nothing', async () => {
    const o = await t.signup()
    const keep = (await create(o.token, { name: 'keep', budget: 100 })).body
    const killed = (await create(o.token, { name: 'killed' })).body
    const gone = (await create(o.token, { name: 'gone', budget: 100 })).body
    const goneChild = (await create(gone.token, { name: 'gone-child', budget: 10 })).body
    const brief = (await create(keep.token, { name: 'brief', budget: 10, ttl_s: 60 })).body
    const lasting = (await create(keep.token, { name: 'lasting', budget: 10 })).body
    await t.req('POST', `/v1/agents/${killed.id}/kill`, { token: o.token })
    await t.req('DELETE', `/v1/agents/${gone.id}`, { token: o.token })
    t.clock.advance(60_000)
    await flushAll(t)

    const { keys } = t.s.ctx
    const counted = async () => (await t.redis.zrangebyscore(keys.liveAgents(o.account_id), `(${t.clock.now()}`, '+inf')).filter((m) => m !== '_').sort()
    const before = await counted()
    expect(before).toEqual([keep.id, killed.id, `${lasting.id},${keep.id}`].sort())
    const ids = [keep, killed, gone, goneChild, brief, lasting].map((a) => a.id)
    await t.redis.del(keys.account(o.account_id), keys.agents(o.account_id), keys.liveAgents(o.account_id), ...ids.map((id) => keys.agent(o.account_id, id)))
    expect((await restoreMissing(t.s.ctx, t.s.db.db)).failed).toEqual([])
    expect(await counted()).toEqual(before)
    // The expired child holds nothing against its parent after the rebuild either: keep carves only
    // lasting's 10, brief is marked as given back, and keep may hand out the other 90.
    expect(await t.redis.hget(keys.agent(o.account_id, keep.id), 'carved')).toBe('10')
    expect(await t.redis.hget(keys.agent(o.account_id, brief.id), 'carve_freed')).toBe('1')
    expect((await create(keep.token, { name: 'wide', budget: 91 })).body).toMatchObject({ error: 'POLICY_DENIED', field: 'budget', limit: 90 })
    // The next create is counted with them.
    const next = (await create(o.token, { name: 'next' })).body
    expect(await counted()).toEqual([...before, next.id].sort())
  })
})
