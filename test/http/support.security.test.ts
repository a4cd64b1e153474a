/**
 * Who reads a support problem, and how many an account may file. An agent token sees the problems
 * its own subtree filed (docs/api.md §8: an agent sees only its own subtree), never the owner's or a
 * sibling's (a billing question, the founder's notes on it). Filing is bounded per account, so a
 * runaway agent (or a leaked token) cannot fill the founder's queue and the database.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { MAX_PROBLEMS_PER_DAY } from '../../src/support/problems'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_PER_TOKEN: '100000', RATE_LIMIT_PER_IP: '100000' } })
})
afterAll(async () => {
  await t.close()
})

const file = (token: string, summary = 'x') => t.req('POST', '/v1/support', { token, body: { category: 'bug', summary } })

describe('support problems: reach and bounds', () => {
  test("an agent reads its own subtree's problems only; the owner's or a sibling's → NOT_FOUND", async () => {
    const a = await t.signup()
    const mk = async (token: string, body: Record<string, unknown>) => (await t.req('POST', '/v1/agents', { token, body })).body
    const parent = await mk(a.token, { name: 'parent' })
    const sibling = await mk(a.token, { name: 'sibling' })
    const child = await mk(parent.token, { name: 'child', budget: 10 })
    const owners = (await file(a.token, 'billing: double charge on my card')).body.id
    const siblings = (await file(sibling.token)).body.id
    const childs = (await file(child.token)).body.id
    const parents = (await file(parent.token)).body.id
    const get = (token: string, id: string) => t.req('GET', `/v1/support/${id}`, { token })
    for (const id of [owners, siblings, childs, parents]) expect((await get(a.token, id)).status).toBe(200)
    expect((await get(parent.token, parents)).status).toBe(200)
    expect((await get(parent.token, childs)).status).toBe(200)
    for (const [token, id] of [
      [parent.token, owners],
      [parent.token, siblings],
      [child.token, parents],
      [child.token, owners],
    ]) {
      const r = await get(token, id)
      expect([r.status, r.body.error]).toEqual([404, 'NOT_FOUND'])
    }
  })

  test('at most MAX_PROBLEMS_PER_DAY problems per account in 24 h → RATE_LIMITED with retry_after_s; a day later it files again', async () => {
    const a = await t.signup()
    const agent = (await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'loop' } })).body
    for (let i = 0; i < MAX_PROBLEMS_PER_DAY; i++) expect((await file(i % 2 ? a.token : agent.token)).status).toBe(201)
    for (const token of [a.token, agent.token]) {
      const r = await file(token)
      expect([r.status, r.body.error]).toEqual([429, 'RATE_LIMITED'])
      expect(r.body.retry_after_s).toBeGreaterThan(0)
    }
    // Another account is not held by this one.
    expect((await file((await t.signup()).token)).status).toBe(201)
    t.clock.advance(24 * 3600_000 + 1000)
    expect((await file(a.token)).status).toBe(201)
  })

  test('filed at once, past the bound: never more than MAX_PROBLEMS_PER_DAY created', async () => {
    const a = await t.signup()
    const rs = await Promise.all(Array.from({ length: MAX_PROBLEMS_PER_DAY + 10 }, () => file(a.token)))
    expect(rs.filter((r) => r.status === 201).length).toBe(MAX_PROBLEMS_PER_DAY)
    expect(rs.filter((r) => r.status === 429).length).toBe(10)
  })
})
