/**
 * Proposals end to end over HTTP (docs/api.md §11): an agent asks, the operator decides, and an
 * approval takes effect on the very next call — a raised agent or account daily cap, a new
 * allowlist pattern, a top-up credited once through the mandate. Declined and expired proposals
 * change nothing; every decision reaches Postgres through the outbox with its events.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll, redisBalance } from '../helpers/ledger'
import { consentSandbox } from '../helpers/money'
import { events, proposals } from '../../src/db/schema'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

async function owner() {
  const o = await t.signup()
  const mk = async (name: string, body: Record<string, unknown> = {}) => (await t.req('POST', '/v1/agents', { token: o.token, body: { name, ...body } })).body as { id: string; token: string }
  return { ...o, mk }
}

const call = (token: string, slug = 'test.echo', q = `q${Math.random()}`) => t.req('POST', `/v1/call/${slug}`, { token, body: { q } })
const propose = (token: string, body: Record<string, unknown>) => t.req('POST', '/v1/proposals', { token, body })
const approve = (token: string, id: string, note?: string) => t.req('POST', `/v1/proposals/${id}/approve`, { token, body: note === undefined ? undefined : { note } })
const decline = (token: string, id: string) => t.req('POST', `/v1/proposals/${id}/decline`, { token })

describe('proposals', () => {
  test('raise_daily_cap for an agent: proposed with a reason, approved, and the next call passes the raised cap', async () => {
    const o = await owner()
    const a = await o.mk('scraper', { daily_cap: 5 })
    expect((await call(a.token)).status).toBe(200)
    const denied = await call(a.token)
    expect(denied.body).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_daily_cap' })

    const p = await propose(a.token, { kind: 'raise_daily_cap', value: 20, reason: 'the crawl needs three more pages today' })
    expect(p.status).toBe(201)
    expect(p.body).toMatchObject({ kind: 'raise_daily_cap', value: 20, agent_id: a.id, status: 'pending', proposed_by: a.id })
    expect(p.body.id).toMatch(/^prop_[A-Za-z0-9_-]{22}$/)
    expect(p.body.status_url).toBe(`http://pab.test/v1/proposals/${p.body.id}`)
    expect(Date.parse(p.body.expires_at) - t.clock.now()).toBe(24 * 3600 * 1000)
    // Filing changes nothing yet.
    expect((await call(a.token)).body.rule).toBe('agent_daily_cap')

    const ok = await approve(o.token, p.body.id, 'go ahead')
    expect(ok.status).toBe(200)
    expect(ok.body).toMatchObject({ id: p.body.id, status: 'approved', decided_via: 'api', note: 'go ahead' })
    expect((await t.req('GET', '/v1/policies', { token: o.token })).body.agents[a.id].daily_cap).toBe(20)
    expect((await call(a.token)).status).toBe(200)

    // The agent learns the decision at status_url.
    const seen = await t.req('GET', `/v1/proposals/${p.body.id}`, { token: a.token })
    expect(seen.body).toMatchObject({ status: 'approved', note: 'go ahead' })

    // A second decision, either way, is a CONFLICT naming the status.
    for (const again of [await approve(o.token, p.body.id), await decline(o.token, p.body.id)]) {
      expect(again.status).toBe(409)
      expect(again.body).toMatchObject({ error: 'CONFLICT', status: 'approved' })
    }
  })

  test('raise_daily_cap for the account (owner, no agent_id): the account cap is raised', async () => {
    const o = await owner()
    await t.req('PUT', '/v1/policies', { token: o.token, body: { account: { daily_cap: 5 } } })
    expect((await call(o.token)).status).toBe(200)
    expect((await call(o.token)).body.error).toBe('DAILY_CAP_REACHED')
    const p = await propose(o.token, { kind: 'raise_daily_cap', value: 50, reason: 'busy day' })
    expect(p.body).toMatchObject({ agent_id: null, proposed_by: 'owner' })
    expect((await approve(o.token, p.body.id)).body.status).toBe('approved')
    expect((await t.req('GET', '/v1/policies', { token: o.token })).body.account.daily_cap).toBe(50)
    expect((await call(o.token)).status).toBe(200)
  })

  test('allow: the new pattern is allowed on the next call; a pattern the list already covers changes nothing', async () => {
    const o = await owner()
    const a = await o.mk('narrow', { allowlist: ['test.cheap'] })
    expect((await call(a.token, 'test.echo')).body.rule).toBe('agent_allowlist')
    const p = await propose(a.token, { kind: 'allow', value: 'test.echo', reason: 'I need the echo' })
    expect(p.body).toMatchObject({ kind: 'allow', value: 'test.echo' })
    expect((await approve(o.token, p.body.id)).body.status).toBe('approved')
    expect((await t.req('GET', '/v1/policies', { token: o.token })).body.agents[a.id].allowlist).toEqual(['test.cheap', 'test.echo'])
    expect((await call(a.token, 'test.echo')).status).toBe(200)

    const wide = await o.mk('wide', { allowlist: ['test.*'] })
    const q = await propose(wide.token, { kind: 'allow', value: 'test.echo', reason: 'just in case' })
    expect((await approve(o.token, q.body.id)).body.status).toBe('approved')
    expect((await t.req('GET', '/v1/policies', { token: o.token })).body.agents[wide.id].allowlist).toEqual(['test.*'])
  })

  test('topup: approved through the mandate, credited exactly once', async () => {
    const o = await owner()
    await consentSandbox(t, o.token, { threshold: 100, refill: 2000, ceiling: 20000 })
    const a = await o.mk('spender')
    const p = await propose(a.token, { kind: 'topup', value: 3000, reason: 'the batch costs 3000' })
    expect(p.body).toMatchObject({ kind: 'topup', value: 3000, agent_id: a.id })
    expect(await redisBalance(t, o.account_id)).toBe(500)
    const ok = await approve(o.token, p.body.id)
    expect(ok.status).toBe(200)
    expect(ok.body.status).toBe('approved')
    expect(await redisBalance(t, o.account_id)).toBe(3500)
    expect((await approve(o.token, p.body.id)).status).toBe(409)
    expect(await redisBalance(t, o.account_id)).toBe(3500)
    expect((await t.req('GET', '/v1/mandate', { token: o.token })).body.refilled_this_period).toBe(3000)
  })

  test('declined and expired proposals change nothing; expiry follows the clock and answers CONFLICT with status expired', async () => {
    const o = await owner()
    const a = await o.mk('capped', { daily_cap: 5 })
    const p = await propose(a.token, { kind: 'raise_daily_cap', value: 100, reason: 'more please' })
    const no = await decline(o.token, p.body.id)
    expect(no.body).toMatchObject({ status: 'declined', decided_via: 'api' })
    expect((await t.req('GET', '/v1/policies', { token: o.token })).body.agents[a.id].daily_cap).toBe(5)
    expect((await approve(o.token, p.body.id)).body).toMatchObject({ error: 'CONFLICT', status: 'declined' })

    const q = await propose(a.token, { kind: 'raise_daily_cap', value: 100, reason: 'more please, again' })
    t.clock.advance(24 * 3600 * 1000 - 1)
    expect((await t.req('GET', `/v1/proposals/${q.body.id}`, { token: a.token })).body.status).toBe('pending')
    t.clock.advance(1)
    expect((await t.req('GET', `/v1/proposals/${q.body.id}`, { token: a.token })).body).toMatchObject({ status: 'expired', decided_via: 'expiry' })
    expect((await approve(o.token, q.body.id)).body).toMatchObject({ error: 'CONFLICT', status: 'expired' })
    expect((await t.req('GET', '/v1/policies', { token: o.token })).body.agents[a.id].daily_cap).toBe(5)

    // An expiry found by the approval itself (no read in between) is applied, and refused.
    const r = await propose(a.token, { kind: 'raise_daily_cap', value: 100, reason: 'third time' })
    t.clock.advance(24 * 3600 * 1000)
    expect((await approve(o.token, r.body.id)).body).toMatchObject({ error: 'CONFLICT', status: 'expired' })
    expect((await t.req('GET', '/v1/policies', { token: o.token })).body.agents[a.id].daily_cap).toBe(5)
  })

  test('listing: the owner sees all, an agent its own; ?status filters', async () => {
    const o = await owner()
    const a = await o.mk('a')
    const b = await o.mk('b')
    const pa = (await propose(a.token, { kind: 'raise_daily_cap', value: 10, reason: 'a' })).body
    const pb = (await propose(b.token, { kind: 'raise_daily_cap', value: 10, reason: 'b' })).body
    await decline(o.token, pb.id)
    const all = await t.req('GET', '/v1/proposals', { token: o.token })
    expect(all.body.proposals.map((p: { id: string }) => p.id).sort()).toEqual([pa.id, pb.id].sort())
    expect((await t.req('GET', '/v1/proposals?status=pending', { token: o.token })).body.proposals.map((p: { id: string }) => p.id)).toEqual([pa.id])
    expect((await t.req('GET', '/v1/proposals', { token: a.token })).body.proposals.map((p: { id: string }) => p.id)).toEqual([pa.id])
    expect((await t.req('GET', '/v1/proposals?status=declined', { token: a.token })).body.proposals).toEqual([])
  })

  test('proposals, decisions and their events reach Postgres through the outbox', async () => {
    const o = await owner()
    const a = await o.mk('durable')
    const p = (await propose(a.token, { kind: 'raise_daily_cap', value: 42, reason: 'for the record' })).body
    await flushAll(t)
    let [row] = await t.s.db.db.select().from(proposals).where(eq(proposals.id, p.id))
    expect(row).toMatchObject({ accountId: o.account_id, agentId: a.id, kind: 'raise_daily_cap', value: '42', status: 'pending', reason: 'for the record', version: 1 })
    await approve(o.token, p.id)
    await flushAll(t)
    ;[row] = await t.s.db.db.select().from(proposals).where(eq(proposals.id, p.id))
    expect(row).toMatchObject({ status: 'approved', decidedVia: 'api', version: 2 })
    const evs = await t.s.db.db.select().from(events).where(eq(events.accountId, o.account_id))
    const mine = evs.filter((e) => e.type.startsWith('proposal.')).sort((x, y) => x.type.localeCompare(y.type))
    expect(mine.map((e) => e.type)).toEqual(['proposal.created', 'proposal.decided'])
    expect(mine[0]!.data).toMatchObject({ proposal_id: p.id, kind: 'raise_daily_cap', value: 42, agent_id: a.id, reason: 'for the record', status_url: p.status_url })
    expect(mine[1]!.data).toMatchObject({ proposal_id: p.id, status: 'approved', via: 'api' })
  })
})

describe('refusals name the proposal that would lift them', () => {
  test('POLICY_DENIED (agent allowlist, agent daily cap), DAILY_CAP_REACHED and an agent’s PAYMENT_REQUIRED carry propose_via and kind', async () => {
    const o = await owner()
    const a = await o.mk('limited', { allowlist: ['test.echo', 'test.pricey'], daily_cap: 5 })
    expect((await call(a.token, 'test.cheap')).body).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_allowlist', propose_via: 'POST /v1/proposals', kind: 'allow' })
    expect((await call(a.token)).status).toBe(200)
    expect((await call(a.token)).body).toMatchObject({ rule: 'agent_daily_cap', propose_via: 'POST /v1/proposals', kind: 'raise_daily_cap' })
    await t.req('PUT', '/v1/policies', { token: o.token, body: { account: { daily_cap: 5 }, agents: { [a.id]: { daily_cap: null } } } })
    expect((await call(a.token)).body).toMatchObject({ error: 'DAILY_CAP_REACHED', propose_via: 'POST /v1/proposals', kind: 'raise_daily_cap' })
    await t.req('PUT', '/v1/policies', { token: o.token, body: { account: { daily_cap: 100000 } } })
    expect((await call(a.token, 'test.pricey')).status).toBe(200) // 495 → 195: the next 300 is too much
    const broke = await call(a.token, 'test.pricey')
    expect(broke.body).toMatchObject({ error: 'PAYMENT_REQUIRED', propose_via: 'POST /v1/proposals', kind: 'topup' })
    // The owner is not an agent: it tops up itself.
    expect((await call(o.token, 'test.pricey')).body.propose_via).toBeUndefined()
  })
})
