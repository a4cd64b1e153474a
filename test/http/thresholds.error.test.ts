/**
 * Warning levels that are not percentages 1..100 (docs/api.md §13a): a structured 400 naming the
 * field, and nothing of the request applies — the daily cap sent beside them neither. Only the
 * owner sets them; they are the account's, not an agent's.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

describe('PUT /v1/policies thresholds: errors', () => {
  test('out of bounds, repeated, too many, or not integers → BAD_REQUEST with field; nothing applies', async () => {
    const owner = await t.signup()
    const agent = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'a' } })).body as { id: string; token: string }
    await t.req('PUT', '/v1/policies', { token: owner.token, body: { account: { thresholds: [25, 75] } } })
    const before = (await t.req('GET', '/v1/policies', { token: owner.token })).body
    const cases: [unknown, string][] = [
      [{ account: { daily_cap: 5, thresholds: [0] } }, 'account.thresholds'],
      [{ account: { daily_cap: 5, thresholds: [101] } }, 'account.thresholds'],
      [{ account: { daily_cap: 5, thresholds: [50.5] } }, 'account.thresholds'],
      [{ account: { daily_cap: 5, thresholds: ['50'] } }, 'account.thresholds'],
      [{ account: { daily_cap: 5, thresholds: [50, 50] } }, 'account.thresholds'],
      [{ account: { daily_cap: 5, thresholds: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] } }, 'account.thresholds'],
      [{ account: { daily_cap: 5, thresholds: '50,80' } }, 'account.thresholds'],
      [{ account: { daily_cap: 5, thresholds: -1 } }, 'account.thresholds'],
      [{ account: { daily_cap: 5 }, agents: { [agent.id]: { thresholds: [50] } } }, `agents.${agent.id}.thresholds`],
      [{ account: { daily_cap: 5 }, thresholds: [50] }, 'thresholds'],
    ]
    for (const [body, field] of cases) {
      const r = await t.req('PUT', '/v1/policies', { token: owner.token, body })
      expect([JSON.stringify(body), r.status, r.body.error]).toEqual([JSON.stringify(body), 400, 'BAD_REQUEST'])
      expect(r.body.field).toBe(field)
      expect(typeof r.body.message).toBe('string')
    }
    expect((await t.req('GET', '/v1/policies', { token: owner.token })).body).toEqual(before)
    expect(before.account.thresholds).toEqual([25, 75])
  })

  test('an agent token cannot change them (FORBIDDEN) and reads the account\'s levels', async () => {
    const owner = await t.signup()
    const agent = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'a' } })).body as { id: string; token: string }
    const r = await t.req('PUT', '/v1/policies', { token: agent.token, body: { account: { thresholds: [] } } })
    expect([r.status, r.body.error]).toEqual([403, 'FORBIDDEN'])
    expect((await t.req('GET', '/v1/policies', { token: agent.token })).body.account.thresholds).toEqual([50, 80, 100])
  })
})
