/**
 * Temporary raises over HTTP (docs/api.md §13b): an approval with `for_s` raises an agent's or the
 * account's daily cap, an agent's allowlist or a top-level agent's budget until approved_at + for_s;
 * from that instant on the debit weighs the original value again, with no writer in between. The
 * proposal shows `lapses_at`, the policy and agent views the raised value with `until` and `base`.
 * An owner's own change of the same field during a raise wins and ends it. Bad durations are a 400
 * naming `for_s` and change nothing.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'
import { agents, events } from '../../src/db/schema'
import { hktDay } from '../../src/clock'

let t: TestApp
const DAY = 86400_000
// Noon HKT of a day to come: an hour's raise stays inside one HKT day (daily spend windows).
const NOON = (hktDay(Date.now()) + 2) * DAY - 8 * 3600_000 + 12 * 3600_000
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})
beforeEach(() => t.clock.set(NOON))

async function owner() {
  const o = await t.signup()
  const mk = async (name: string, body: Record<string, unknown> = {}, token = o.token) =>
    (await t.req('POST', '/v1/agents', { token, body: { name, ...body } })).body as { id: string; token: string }
  return { ...o, mk }
}

const call = (token: string, slug = 'test.cheap') => t.req('POST', `/v1/call/${slug}`, { token, body: { q: `q${Math.random()}` } })
const propose = async (token: string, body: Record<string, unknown>) => {
  const r = await t.req('POST', '/v1/proposals', { token, body: { reason: 'more room for an hour', ...body } })
  expect(r.status).toBe(201)
  return r.body.id as string
}
const approve = (token: string, id: string, body?: Record<string, unknown>) => t.req('POST', `/v1/proposals/${id}/approve`, { token, body })
const policies = async (token: string) => (await t.req('GET', '/v1/policies', { token })).body

describe('temporary raises', () => {
  test("an agent's daily cap: raised for an hour, shown with until and base, back to the original at the lapse", async () => {
    const o = await owner()
    const a = await o.mk('crawler', { daily_cap: 3 })
    for (let i = 0; i < 3; i++) expect((await call(a.token)).status).toBe(200)
    expect((await call(a.token)).body).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_daily_cap' })

    const id = await propose(a.token, { kind: 'raise_daily_cap', value: 6 })
    const ok = await approve(o.token, id, { for_s: 3600, note: 'one hour' })
    expect(ok.status).toBe(200)
    const lapses = NOON + 3600_000
    expect(ok.body).toMatchObject({ status: 'approved', lapses_at: new Date(lapses).toISOString(), note: 'one hour' })
    expect((await t.req('GET', `/v1/proposals/${id}`, { token: a.token })).body.lapses_at).toBe(new Date(lapses).toISOString())

    const view = (await policies(o.token)).agents[a.id]
    expect(view.daily_cap).toBe(6)
    expect(view.raised).toEqual({ daily_cap: { until: new Date(lapses).toISOString(), base: 3 } })
    // The agent's own view and the agent listing say the same.
    expect((await policies(a.token)).agents[a.id].raised.daily_cap.base).toBe(3)
    const listed = (await t.req('GET', '/v1/agents', { token: o.token })).body.agents.find((x: { id: string }) => x.id === a.id)
    expect(listed).toMatchObject({ daily_cap: 6, raised: { daily_cap: { base: 3 } } })

    expect((await call(a.token)).status).toBe(200)
    t.clock.set(lapses - 1)
    expect((await call(a.token)).status).toBe(200)
    // At the lapse: the original cap again (5 spent of 3), with nothing written in between.
    t.clock.set(lapses)
    expect((await call(a.token)).body).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_daily_cap', cap: 3 })
    const after = (await policies(o.token)).agents[a.id]
    expect(after.daily_cap).toBe(3)
    expect(after.raised).toBeUndefined()
  })

  test("the account's daily cap, raised for 90 s by the owner's own proposal", async () => {
    const o = await owner()
    await t.req('PUT', '/v1/policies', { token: o.token, body: { account: { daily_cap: 2 } } })
    await call(o.token)
    await call(o.token)
    expect((await call(o.token)).body.error).toBe('DAILY_CAP_REACHED')
    const id = await propose(o.token, { kind: 'raise_daily_cap', value: 4 })
    expect((await approve(o.token, id, { for_s: 90 })).body.lapses_at).toBe(new Date(NOON + 90_000).toISOString())
    const p = await policies(o.token)
    expect(p.account).toMatchObject({ daily_cap: 4, raised: { daily_cap: { until: new Date(NOON + 90_000).toISOString(), base: 2 } } })
    expect((await call(o.token)).status).toBe(200)
    t.clock.advance(90_000)
    expect((await call(o.token)).body).toMatchObject({ error: 'DAILY_CAP_REACHED', cap: 2 })
    expect((await t.req('GET', '/v1/balance', { token: o.token })).body.daily_cap).toBe(2)
  })

  test('an allowlist pattern for a time, and a lasting one approved during it stays after the lapse', async () => {
    const o = await owner()
    const a = await o.mk('narrow', { allowlist: ['test.cheap'] })
    expect((await call(a.token, 'test.search')).body.rule).toBe('agent_allowlist')
    const temp = await propose(a.token, { kind: 'allow', value: 'test.search' })
    expect((await approve(o.token, temp, { for_s: 600 })).status).toBe(200)
    expect((await policies(o.token)).agents[a.id]).toMatchObject({ allowlist: ['test.cheap', 'test.search'], raised: { allowlist: { base: ['test.cheap'] } } })
    expect((await call(a.token, 'test.search')).status).toBe(200)

    // For good, while the list is raised: the new pattern joins the list that stays.
    const lasting = await propose(a.token, { kind: 'allow', value: 'test.bad' })
    const r = await approve(o.token, lasting)
    expect(r.body).toMatchObject({ status: 'approved', lapses_at: null })
    expect((await policies(o.token)).agents[a.id].raised.allowlist.base).toEqual(['test.cheap', 'test.bad'])

    t.clock.advance(600_000)
    expect((await call(a.token, 'test.search')).body.rule).toBe('agent_allowlist')
    expect((await policies(o.token)).agents[a.id]).toMatchObject({ allowlist: ['test.cheap', 'test.bad'] })
    expect((await policies(o.token)).agents[a.id].raised).toBeUndefined()
  })

  test("a top-level agent's budget for a time; a sub-agent's budget and a top-up cannot lapse (400 for_s)", async () => {
    const o = await owner()
    const a = await o.mk('spender', { budget: 2 })
    await call(a.token)
    await call(a.token)
    expect((await call(a.token)).body.rule).toBe('agent_budget')
    const id = await propose(a.token, { kind: 'raise_budget', value: 5 })
    expect((await approve(o.token, id, { for_s: 120 })).status).toBe(200)
    expect((await policies(o.token)).agents[a.id]).toMatchObject({ budget: 5, raised: { budget: { base: 2 } } })
    expect((await call(a.token)).status).toBe(200)
    t.clock.advance(120_000)
    expect((await call(a.token)).body).toMatchObject({ rule: 'agent_budget', budget: 2 })

    const parent = await o.mk('parent', { budget: 10 })
    const child = await o.mk('child', { budget: 1 }, parent.token)
    const forChild = await propose(o.token, { kind: 'raise_budget', value: 1, agent_id: child.id })
    const refused = await approve(o.token, forChild, { for_s: 120 })
    expect(refused.status).toBe(400)
    expect(refused.body).toMatchObject({ error: 'BAD_REQUEST', field: 'for_s' })
    expect((await t.req('GET', `/v1/proposals/${forChild}`, { token: o.token })).body.status).toBe('pending')
  })

  test("the owner's own change of a raised field wins and ends the raise", async () => {
    const o = await owner()
    const a = await o.mk('w', { daily_cap: 1 })
    const id = await propose(a.token, { kind: 'raise_daily_cap', value: 10 })
    await approve(o.token, id, { for_s: 60 })
    const put = await t.req('PUT', '/v1/policies', { token: o.token, body: { agents: { [a.id]: { daily_cap: 4 } } } })
    expect(put.status).toBe(200)
    expect(put.body.agents[a.id].daily_cap).toBe(4)
    expect(put.body.agents[a.id].raised).toBeUndefined()
    t.clock.advance(60_000)
    for (let i = 0; i < 4; i++) expect((await call(a.token)).status).toBe(200)
    expect((await call(a.token)).body).toMatchObject({ rule: 'agent_daily_cap', cap: 4 })
  })

  test('a second raise of the same field keeps the first base; a change of another field keeps the raise', async () => {
    const o = await owner()
    const a = await o.mk('twice', { daily_cap: 1 })
    await approve(o.token, await propose(a.token, { kind: 'raise_daily_cap', value: 5 }), { for_s: 60 })
    await approve(o.token, await propose(a.token, { kind: 'raise_daily_cap', value: 8 }), { for_s: 120 })
    await t.req('PUT', '/v1/policies', { token: o.token, body: { agents: { [a.id]: { per_call_max: 50 } } } })
    expect((await policies(o.token)).agents[a.id]).toMatchObject({
      daily_cap: 8,
      per_call_max: 50,
      raised: { daily_cap: { until: new Date(NOON + 120_000).toISOString(), base: 1 } },
    })
    t.clock.advance(60_000)
    expect((await policies(o.token)).agents[a.id].daily_cap).toBe(8)
    t.clock.advance(60_000)
    expect((await policies(o.token)).agents[a.id].daily_cap).toBe(1)
  })

  test("a parent's raised cap bounds its new sub-agents while it stands, its base from the lapse on", async () => {
    const o = await owner()
    const p = await o.mk('parent', { daily_cap: 5, budget: 100 })
    await approve(o.token, await propose(o.token, { kind: 'raise_daily_cap', value: 20, agent_id: p.id }), { for_s: 60 })
    const during = await t.req('POST', '/v1/agents', { token: p.token, body: { name: 'c1', budget: 10, daily_cap: 10 } })
    expect(during.status).toBe(201)
    t.clock.advance(60_000)
    const after = await t.req('POST', '/v1/agents', { token: p.token, body: { name: 'c2', budget: 10, daily_cap: 10 } })
    expect(after.status).toBe(403)
    expect(after.body).toMatchObject({ error: 'POLICY_DENIED', field: 'daily_cap', limit: 5 })
  })

  test('Postgres keeps the lasting policy; the decision event carries lapses_at', async () => {
    const o = await owner()
    const a = await o.mk('kept', { daily_cap: 7 })
    const id = await propose(a.token, { kind: 'raise_daily_cap', value: 70 })
    await approve(o.token, id, { for_s: 3600 })
    await flushAll(t)
    const [row] = await t.s.db.db.select().from(agents).where(eq(agents.id, a.id))
    expect(row!.dailyCap).toBe(7)
    const decided = (await t.s.db.db.select().from(events).where(eq(events.accountId, o.account_id))).find((e) => e.type === 'proposal.decided')
    expect((decided!.data as Record<string, unknown>).lapses_at).toBe(new Date(NOON + 3600_000).toISOString())
  })

  test('a proposer asks for a time: the approval defaults to it, an approval with for_s overrides it; refusals say so', async () => {
    const o = await owner()
    const a = await o.mk('asker', { daily_cap: 1 })
    await call(a.token)
    const refused = await call(a.token)
    expect(refused.body).toMatchObject({ rule: 'agent_daily_cap', kind: 'raise_daily_cap', propose_via: 'POST /v1/proposals' })
    expect(refused.body.propose_temporary).toContain('for_s')

    const asked = await t.req('POST', '/v1/proposals', { token: a.token, body: { kind: 'raise_daily_cap', value: 4, reason: 'r', for_s: 600 } })
    expect(asked.body).toMatchObject({ status: 'pending', for_s: 600, lapses_at: null })
    expect((await approve(o.token, asked.body.id)).body).toMatchObject({ for_s: 600, lapses_at: new Date(NOON + 600_000).toISOString() })
    const other = await propose(a.token, { kind: 'raise_daily_cap', value: 5, for_s: 600 })
    expect((await approve(o.token, other, { for_s: 60 })).body.lapses_at).toBe(new Date(NOON + 60_000).toISOString())
    // Without for_s anywhere a proposal shows null and its approval is lasting.
    const lasting = await propose(a.token, { kind: 'raise_daily_cap', value: 6 })
    expect((await approve(o.token, lasting)).body).toMatchObject({ for_s: null, lapses_at: null })
    expect((await policies(o.token)).agents[a.id].raised).toBeUndefined()

    // Checked when filed: bounds, a top-up, a sub-agent's budget.
    for (const [body, field] of [
      [{ kind: 'raise_daily_cap', value: 4, for_s: 59 }, 'for_s'],
      [{ kind: 'raise_daily_cap', value: 4, for_s: '1h' }, 'for_s'],
      [{ kind: 'topup', value: 1000, for_s: 3600 }, 'for_s'],
    ] as const) {
      const r = await t.req('POST', '/v1/proposals', { token: a.token, body: { reason: 'r', ...body } })
      expect([r.status, r.body.error, r.body.field]).toEqual([400, 'BAD_REQUEST', field])
    }
    const parent = await o.mk('p', { budget: 10 })
    const child = await o.mk('c', { budget: 2 }, parent.token)
    const r = await t.req('POST', '/v1/proposals', { token: child.token, body: { kind: 'raise_budget', value: 5, reason: 'r', for_s: 600 } })
    expect([r.status, r.body.error, r.body.field]).toEqual([400, 'BAD_REQUEST', 'for_s'])
    expect((await t.req('GET', '/v1/proposals?status=pending', { token: o.token })).body.proposals).toHaveLength(0)
  })

  test('bad durations: 400 naming for_s, the proposal still pending and nothing raised', async () => {
    const o = await owner()
    const a = await o.mk('bad', { daily_cap: 1 })
    const id = await propose(a.token, { kind: 'raise_daily_cap', value: 9 })
    for (const for_s of [59, 2_592_001, 0, -60, 1.5, '3600', '1h', null]) {
      const r = await approve(o.token, id, { for_s })
      expect([for_s, r.status, r.body.error, r.body.field]).toEqual([for_s, 400, 'BAD_REQUEST', 'for_s'])
    }
    expect((await t.req('GET', `/v1/proposals/${id}`, { token: o.token })).body).toMatchObject({ status: 'pending', lapses_at: null })
    expect((await policies(o.token)).agents[a.id]).toMatchObject({ daily_cap: 1 })
    const topup = await propose(a.token, { kind: 'topup', value: 1000 })
    const r = await approve(o.token, topup, { for_s: 3600 })
    expect([r.status, r.body.error, r.body.field]).toEqual([400, 'BAD_REQUEST', 'for_s'])
    // for_s on a decline is an unknown field.
    const d = await t.req('POST', `/v1/proposals/${id}/decline`, { token: o.token, body: { for_s: 60 } })
    expect(d.status).toBe(400)
    // An agent may not approve, with or without a duration.
    expect((await approve(a.token, id, { for_s: 60 })).status).toBe(403)
  })
})
