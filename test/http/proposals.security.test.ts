/**
 * Who may do what with a proposal, and that an approval can never do what the operator could not
 * do directly: an agent cannot decide (FORBIDDEN), reaches only itself (NOT_FOUND for a sibling or
 * another account), holds at most 10 pending; approvals refused by the account allowlist or the
 * founder's balance cap answer what the direct endpoints answer, and leave the proposal pending;
 * 20 racing approve/decline requests on one proposal have exactly one winner.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { redisBalance } from '../helpers/ledger'
import { consentSandbox } from '../helpers/money'

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

const propose = (token: string, body: Record<string, unknown>) => t.req('POST', '/v1/proposals', { token, body })
const cap = (token: string, reason = 'more', extra: Record<string, unknown> = {}) => propose(token, { kind: 'raise_daily_cap', value: 100, reason, ...extra })
const policies = async (token: string) => (await t.req('GET', '/v1/policies', { token })).body

describe('proposals: who may do what', () => {
  test('an agent cannot approve or decline, even its own proposal (FORBIDDEN)', async () => {
    const o = await owner()
    const a = await o.mk('a', { daily_cap: 5 })
    const p = (await cap(a.token)).body
    for (const verb of ['approve', 'decline']) {
      const r = await t.req('POST', `/v1/proposals/${p.id}/${verb}`, { token: a.token })
      expect(r.status).toBe(403)
      expect(r.body.error).toBe('FORBIDDEN')
    }
    expect((await t.req('GET', `/v1/proposals/${p.id}`, { token: o.token })).body.status).toBe('pending')
    expect((await policies(o.token)).agents[a.id].daily_cap).toBe(5)
  })

  test('an agent proposes for itself only: a sibling or another account is NOT_FOUND', async () => {
    const o = await owner()
    const a = await o.mk('a')
    const sib = await o.mk('sibling')
    const other = await owner()
    const theirs = await other.mk('theirs')
    for (const agent_id of [sib.id, theirs.id, 'agt_0000000000000000000000']) {
      const r = await cap(a.token, 'for someone else', { agent_id })
      expect(r.status).toBe(404)
      expect(r.body).toMatchObject({ error: 'NOT_FOUND', resource: 'agent' })
    }
    // The owner of another account cannot name this account's agent either.
    expect((await cap(other.token, 'x', { agent_id: a.id })).body).toMatchObject({ error: 'NOT_FOUND' })
    expect((await t.req('GET', '/v1/proposals', { token: o.token })).body.proposals).toEqual([])
  })

  test("another account's proposal is NOT_FOUND to read and to decide", async () => {
    const o = await owner()
    const a = await o.mk('a', { daily_cap: 5 })
    const p = (await cap(a.token)).body
    const other = await owner()
    expect((await t.req('GET', `/v1/proposals/${p.id}`, { token: other.token })).status).toBe(404)
    for (const verb of ['approve', 'decline']) expect((await t.req('POST', `/v1/proposals/${p.id}/${verb}`, { token: other.token })).body).toMatchObject({ error: 'NOT_FOUND', resource: 'proposal' })
    expect((await t.req('GET', '/v1/proposals/prop_nope', { token: o.token })).status).toBe(404)
    expect((await policies(o.token)).agents[a.id].daily_cap).toBe(5)
  })

  test("an agent reads only its own subtree's proposals: a sibling's, its parent's or the account's own → NOT_FOUND, as the list shows", async () => {
    const o = await owner()
    const parent = await o.mk('orchestrator', { budget: 100 })
    const child = (await t.req('POST', '/v1/agents', { token: parent.token, body: { name: 'worker', budget: 40 } })).body as { id: string; token: string }
    const sibling = await o.mk('sibling')
    const ofParent = (await cap(parent.token, 'the parent wants more')).body
    const ofChild = (await cap(child.token, 'the child wants more')).body
    const ofSibling = (await cap(sibling.token, 'the sibling wants more')).body
    const ofAccount = (await propose(o.token, { kind: 'raise_daily_cap', value: 30000, reason: 'the account wants more' })).body
    const read = async (token: string, id: string) => (await t.req('GET', `/v1/proposals/${id}`, { token }))
    const reach = async (token: string) => {
      const seen: string[] = []
      for (const p of [ofParent, ofChild, ofSibling, ofAccount]) {
        const r = await read(token, p.id)
        if (r.status === 200) {
          seen.push(p.id)
          continue
        }
        expect(r.body).toMatchObject({ error: 'NOT_FOUND', resource: 'proposal' })
        expect(r.text).not.toContain('wants more')
      }
      return seen.sort()
    }
    const listed = async (token: string) => (await t.req('GET', '/v1/proposals', { token })).body.proposals.map((x: { id: string }) => x.id).sort()
    expect(await reach(parent.token)).toEqual([ofParent.id, ofChild.id].sort())
    expect(await reach(child.token)).toEqual([ofChild.id])
    expect(await reach(sibling.token)).toEqual([ofSibling.id])
    for (const a of [parent, child, sibling]) expect(await reach(a.token)).toEqual(await listed(a.token))
    // The operator reads all four.
    for (const p of [ofParent, ofChild, ofSibling, ofAccount]) expect((await read(o.token, p.id)).status).toBe(200)
  })

  test('at most 10 pending per agent (RATE_LIMITED); a decision frees a slot; other agents are not counted', async () => {
    const o = await owner()
    const a = await o.mk('greedy')
    const b = await o.mk('modest')
    const ids: string[] = []
    for (let i = 0; i < 10; i++) {
      const r = await cap(a.token, `ask ${i}`)
      expect(r.status).toBe(201)
      ids.push(r.body.id)
    }
    const eleventh = await cap(a.token, 'one more')
    expect(eleventh.status).toBe(429)
    expect(eleventh.body.error).toBe('RATE_LIMITED')
    expect(eleventh.body.retry_after_s).toBe(24 * 3600)
    expect(eleventh.headers.get('retry-after')).toBe(String(24 * 3600))
    expect((await cap(b.token)).status).toBe(201)
    await t.req('POST', `/v1/proposals/${ids[0]}/decline`, { token: o.token })
    expect((await cap(a.token, 'now there is room')).status).toBe(201)
    expect((await cap(a.token, 'but not twice')).status).toBe(429)
  })

  test('10 concurrent proposals of one agent past 9 pending: exactly one more gets in', async () => {
    const o = await owner()
    const a = await o.mk('racer')
    for (let i = 0; i < 9; i++) expect((await cap(a.token, `ask ${i}`)).status).toBe(201)
    const rs = await Promise.all(Array.from({ length: 10 }, (_, i) => cap(a.token, `race ${i}`)))
    expect(rs.filter((r) => r.status === 201)).toHaveLength(1)
    expect(rs.filter((r) => r.status === 429)).toHaveLength(9)
  })

  test('20 parallel requests mixing approve and decline on one proposal: exactly one wins, the rest CONFLICT', async () => {
    for (const kind of ['raise_daily_cap', 'topup'] as const) {
      const o = await owner()
      if (kind === 'topup') await consentSandbox(t, o.token, { threshold: 100, refill: 2000, ceiling: 20000 })
      const a = await o.mk('contested', { daily_cap: 5 })
      const p = (await propose(a.token, { kind, value: kind === 'topup' ? 2000 : 77, reason: 'race me' })).body
      const rs = await Promise.all(Array.from({ length: 20 }, (_, i) => t.req('POST', `/v1/proposals/${p.id}/${i % 2 ? 'decline' : 'approve'}`, { token: o.token })))
      const won = rs.filter((r) => r.status === 200)
      expect(won).toHaveLength(1)
      expect(rs.filter((r) => r.status === 409 && r.body.error === 'CONFLICT')).toHaveLength(19)
      const final = (await t.req('GET', `/v1/proposals/${p.id}`, { token: o.token })).body.status
      expect(won[0]!.body.status).toBe(final)
      if (kind === 'raise_daily_cap') expect((await policies(o.token)).agents[a.id].daily_cap).toBe(final === 'approved' ? 77 : 5)
      else expect(await redisBalance(t, o.account_id)).toBe(final === 'approved' ? 2500 : 500)
    }
  })
})

describe('an approval does only what the operator could do directly', () => {
  test('a topup past the founder-only balance cap: BALANCE_CAP as POST /v1/topup answers, nothing credited, still pending', async () => {
    const o = await owner()
    await consentSandbox(t, o.token, { threshold: 100, refill: 2000, ceiling: 500000 })
    const a = await o.mk('big')
    const p = (await propose(a.token, { kind: 'topup', value: 100000, reason: 'a lot' })).body
    const direct = await t.req('POST', '/v1/topup', { token: o.token, body: { amount: 100000 } })
    const r = await t.req('POST', `/v1/proposals/${p.id}/approve`, { token: o.token })
    expect(direct.status).toBe(409)
    expect(r.status).toBe(direct.status)
    expect(r.body).toEqual(direct.body)
    expect(r.body).toMatchObject({ error: 'BALANCE_CAP', parked: false })
    expect(await redisBalance(t, o.account_id)).toBe(500)
    expect((await t.req('GET', `/v1/proposals/${p.id}`, { token: o.token })).body.status).toBe('pending')
    // Still decidable afterwards.
    expect((await t.req('POST', `/v1/proposals/${p.id}/decline`, { token: o.token })).body.status).toBe('declined')
  })

  test('a topup without a mandate: PAYMENT_REQUIRED no_mandate, still pending', async () => {
    const o = await owner()
    const p = (await propose(o.token, { kind: 'topup', value: 2000, reason: 'no card yet' })).body
    const r = await t.req('POST', `/v1/proposals/${p.id}/approve`, { token: o.token })
    expect(r.body).toMatchObject({ error: 'PAYMENT_REQUIRED', reason: 'no_mandate' })
    expect((await t.req('GET', `/v1/proposals/${p.id}`, { token: o.token })).body.status).toBe('pending')
  })

  test('an allow pattern the account allowlist refuses: POLICY_DENIED account_allowlist, nothing changed, still pending', async () => {
    const o = await owner()
    await t.req('PUT', '/v1/policies', { token: o.token, body: { account: { allowlist: ['test.cheap', 'proxy:*'] } } })
    const a = await o.mk('boxed', { allowlist: ['test.cheap'] })
    for (const value of ['test.echo', 'test.*']) {
      const p = (await propose(a.token, { kind: 'allow', value, reason: 'let me out' })).body
      const r = await t.req('POST', `/v1/proposals/${p.id}/approve`, { token: o.token })
      expect(r.status).toBe(403)
      expect(r.body).toMatchObject({ error: 'POLICY_DENIED', rule: 'account_allowlist', raise_via: 'PUT /v1/policies' })
      expect((await t.req('GET', `/v1/proposals/${p.id}`, { token: o.token })).body.status).toBe('pending')
    }
    expect((await policies(o.token)).agents[a.id].allowlist).toEqual(['test.cheap'])
    // Within the account's list it goes through.
    const ok = (await propose(a.token, { kind: 'allow', value: 'proxy:fake', reason: 'the proxy' })).body
    expect((await t.req('POST', `/v1/proposals/${ok.id}/approve`, { token: o.token })).body.status).toBe('approved')
    expect((await policies(o.token)).agents[a.id].allowlist).toEqual(['test.cheap', 'proxy:fake'])
  })

  test('a revoked agent: its proposal cannot be approved (CONFLICT), only declined', async () => {
    const o = await owner()
    const a = await o.mk('gone', { daily_cap: 5 })
    const p = (await cap(a.token)).body
    await t.req('DELETE', `/v1/agents/${a.id}`, { token: o.token })
    expect((await t.req('POST', `/v1/proposals/${p.id}/approve`, { token: o.token })).body).toMatchObject({ error: 'CONFLICT', status: 'pending' })
    expect((await t.req('POST', `/v1/proposals/${p.id}/decline`, { token: o.token })).body.status).toBe('declined')
  })

  test('an agent cannot propose for its revoked sub-agent: CONFLICT, as the owner is answered; nothing filed', async () => {
    const o = await owner()
    const parent = await o.mk('lead', { budget: 100 })
    const child = (await t.req('POST', '/v1/agents', { token: parent.token, body: { name: 'done', budget: 10 } })).body as { id: string }
    expect((await t.req('DELETE', `/v1/agents/${child.id}`, { token: parent.token })).status).toBe(200)
    for (const token of [parent.token, o.token]) {
      const r = await propose(token, { kind: 'raise_budget', value: 50, agent_id: child.id, reason: 'one more run' })
      expect(r.status).toBe(409)
      expect(r.body.error).toBe('CONFLICT')
    }
    expect((await t.req('GET', '/v1/proposals', { token: o.token })).body.proposals).toEqual([])
  })

  test('raise_budget: approved through the policy path, the next call passes the raised budget', async () => {
    const o = await owner()
    const a = await o.mk('budgeted', { budget: 5 })
    expect((await t.req('POST', '/v1/call/test.echo', { token: a.token, body: { q: 'one' } })).status).toBe(200)
    expect((await t.req('POST', '/v1/call/test.echo', { token: a.token, body: { q: 'two' } })).body).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_budget', propose_via: 'POST /v1/proposals', kind: 'raise_budget' })
    const p = await propose(a.token, { kind: 'raise_budget', value: 50, reason: 'bigger job' })
    expect(p.status).toBe(201)
    expect((await t.req('POST', `/v1/proposals/${p.body.id}/approve`, { token: o.token })).body.status).toBe('approved')
    expect((await policies(o.token)).agents[a.id].budget).toBe(50)
    expect((await t.req('POST', '/v1/call/test.echo', { token: a.token, body: { q: 'three' } })).status).toBe(200)
  })

  test('raise_budget for a sub-agent: an agent proposes for its child; approved through the policy path, which moves the parent carve', async () => {
    const o = await owner()
    const parent = await o.mk('orchestrator', { budget: 100 })
    const child = (await t.req('POST', '/v1/agents', { token: parent.token, body: { name: 'worker', budget: 40 } })).body as { id: string; token: string }
    const sibling = (await t.req('POST', '/v1/agents', { token: parent.token, body: { name: 'other', budget: 10 } })).body as { id: string; token: string }
    // The parent reaches its child; the child does not reach its sibling.
    const ok = await propose(parent.token, { kind: 'raise_budget', value: 60, agent_id: child.id, reason: 'the worker needs more' })
    expect(ok.status).toBe(201)
    expect((await propose(child.token, { kind: 'raise_budget', value: 60, agent_id: sibling.id, reason: 'x' })).body.error).toBe('NOT_FOUND')
    expect((await t.req('GET', '/v1/proposals', { token: parent.token })).body.proposals.map((x: { id: string }) => x.id)).toContain(ok.body.id)
    expect((await t.req('GET', '/v1/proposals', { token: sibling.token })).body.proposals).toEqual([])
    // 60 fits in what the parent has left (100 − 10 carved to the sibling).
    expect((await t.req('POST', `/v1/proposals/${ok.body.id}/approve`, { token: o.token })).body.status).toBe('approved')
    expect((await policies(o.token)).agents[child.id].budget).toBe(60)
    // The approval went through PUT /v1/policies' path, which moves the parent's carve: the parent
    // has 100 − 10 − 60 = 30 left to hand out, not the 50 it had before.
    expect((await t.req('POST', '/v1/agents', { token: parent.token, body: { name: 'late', budget: 31 } })).body).toMatchObject({ error: 'POLICY_DENIED', rule: 'exceeds_parent' })
    expect((await t.req('POST', '/v1/agents', { token: parent.token, body: { name: 'late', budget: 30 } })).status).toBe(201)
  })
})

describe('proposal input', () => {
  test('kind, value, agent_id and reason are checked (BAD_REQUEST naming the field)', async () => {
    const o = await owner()
    const a = await o.mk('a')
    const bad = async (body: Record<string, unknown>, field: string, token = a.token) => {
      const r = await propose(token, body)
      expect(r.status).toBe(400)
      expect(r.body.field).toBe(field)
    }
    await bad({ kind: 'raise_per_call_max', value: 1, reason: 'x' }, 'kind')
    await bad({ kind: 'raise_daily_cap', value: -1, reason: 'x' }, 'value')
    await bad({ kind: 'raise_daily_cap', value: 'lots', reason: 'x' }, 'value')
    await bad({ kind: 'allow', value: 5, reason: 'x' }, 'value')
    await bad({ kind: 'allow', value: 'Not A Pattern', reason: 'x' }, 'value')
    await bad({ kind: 'topup', value: 3, reason: 'x' }, 'value')
    await bad({ kind: 'raise_daily_cap', value: 5, reason: 'x'.repeat(281) }, 'reason')
    await bad({ kind: 'raise_daily_cap', value: 5, reason: 'two\nlines' }, 'reason')
    await bad({ kind: 'raise_daily_cap', value: 5 }, 'reason')
    await bad({ kind: 'allow', value: 'test.echo', reason: 'whose?' }, 'agent_id', o.token)
    expect((await propose(a.token, { kind: 'raise_daily_cap', value: 5, reason: 'x'.repeat(280) })).status).toBe(201)
  })
})
