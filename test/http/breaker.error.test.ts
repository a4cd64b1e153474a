/** The breaker policy refuses what it cannot mean: negative, fractional or unknown settings, and agents of other accounts. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

describe('breaker policy refusals', () => {
  test('bad values → BAD_REQUEST naming the field; nothing changes', async () => {
    const owner = await t.signup()
    const a = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'a' } })).body
    const before = (await t.req('GET', '/v1/policies', { token: owner.token })).body
    for (const [breaker, field] of [
      [{ credits_per_minute: -1 }, `agents.${a.id}.breaker.credits_per_minute`],
      [{ identical_per_minute: 2.5 }, `agents.${a.id}.breaker.identical_per_minute`],
      [{ identical_per_minute: 'lots' }, `agents.${a.id}.breaker.identical_per_minute`],
      [{ per_second: 3 }, `agents.${a.id}.breaker.per_second`],
    ] as const) {
      const r = await t.req('PUT', '/v1/policies', { token: owner.token, body: { agents: { [a.id]: { breaker } } } })
      expect([JSON.stringify(breaker), r.status, r.body.error, r.body.field]).toEqual([JSON.stringify(breaker), 400, 'BAD_REQUEST', field])
    }
    expect((await t.req('GET', '/v1/policies', { token: owner.token })).body).toEqual(before)
  })

  test("another account's agent → NOT_FOUND; an agent token → FORBIDDEN", async () => {
    const owner = await t.signup()
    const other = await t.signup()
    const theirs = (await t.req('POST', '/v1/agents', { token: other.token, body: { name: 'x' } })).body
    const r = await t.req('PUT', '/v1/policies', { token: owner.token, body: { agents: { [theirs.id]: { breaker: { credits_per_minute: 0 } } } } })
    expect(r.body).toMatchObject({ error: 'NOT_FOUND', agent_id: theirs.id })
    const self = await t.req('PUT', '/v1/policies', { token: theirs.token, body: { agents: { [theirs.id]: { breaker: { credits_per_minute: 0 } } } } })
    expect(self.body.error).toBe('FORBIDDEN')
  })
})
