/**
 * A rebuild of Redis from Postgres (and the outbox) during a temporary raise (docs/api.md §13b):
 * the projection keeps the lasting policy, so the rebuilt account and agent carry their base values
 * and no raise — a rebuild ends a raise early and never makes one last. The approved proposal keeps
 * its lapses_at.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { hashToken } from '../../src/auth/tokens'
import { restoreMissing } from '../../src/recovery/rebuild'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

const call = (token: string) => t.req('POST', '/v1/call/test.cheap', { token, body: { q: `q${Math.random()}` } })
const approveFor = async (owner: string, body: Record<string, unknown>) => {
  const p = await t.req('POST', '/v1/proposals', { token: owner, body: { reason: 'r', ...body } })
  const r = await t.req('POST', `/v1/proposals/${p.body.id}/approve`, { token: owner, body: { for_s: 3600 } })
  expect(r.status).toBe(200)
  return r.body
}

describe('rebuild during a raise', () => {
  test('the base values come back, the raises do not', async () => {
    const o = await t.signup()
    await t.req('PUT', '/v1/policies', { token: o.token, body: { account: { daily_cap: 50 } } })
    const a = (await t.req('POST', '/v1/agents', { token: o.token, body: { name: 'w', daily_cap: 2, allowlist: ['test.cheap'] } })).body
    const cap = await approveFor(o.token, { kind: 'raise_daily_cap', value: 6, agent_id: a.id })
    await flushAll(t)
    // These two only in the outbox when Redis is lost.
    await approveFor(o.token, { kind: 'raise_daily_cap', value: 80 })
    await approveFor(o.token, { kind: 'allow', value: 'test.echo', agent_id: a.id })
    const during = (await t.req('GET', '/v1/policies', { token: o.token })).body
    expect(during.account.daily_cap).toBe(80)
    expect(during.agents[a.id]).toMatchObject({ daily_cap: 6, allowlist: ['test.cheap', 'test.echo'] })

    const { keys } = t.s.ctx
    await t.redis.del(keys.account(o.account_id), keys.agents(o.account_id), keys.agent(o.account_id, a.id), keys.token(hashToken(a.token)))
    expect((await restoreMissing(t.s.ctx, t.s.db.db)).failed).toEqual([])

    const after = (await t.req('GET', '/v1/policies', { token: o.token })).body
    expect(after.account).toEqual({ daily_cap: 50, balance_cap: 100000, allowlist: null, thresholds: [50, 80, 100] })
    expect(after.agents[a.id]).toMatchObject({ daily_cap: 2, allowlist: ['test.cheap'] })
    expect(after.agents[a.id].raised).toBeUndefined()
    expect(await t.redis.hget(keys.agent(o.account_id, a.id), 'raises')).toBeNull()
    for (let i = 0; i < 2; i++) expect((await call(a.token)).status).toBe(200)
    expect((await call(a.token)).body).toMatchObject({ rule: 'agent_daily_cap', cap: 2 })
    expect((await t.req('GET', `/v1/proposals/${cap.id}`, { token: o.token })).body.lapses_at).toBe(cap.lapses_at)
  })
})
