import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

async function setup() {
  const owner = await t.signup()
  const agent = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'a' } })).body as { id: string; token: string }
  const before = (await t.req('GET', '/v1/policies', { token: owner.token })).body
  const unchanged = async () => expect((await t.req('GET', '/v1/policies', { token: owner.token })).body).toEqual(before)
  return { owner, agent, unchanged }
}

describe('policy errors', () => {
  test('balance_cap is founder-only → FORBIDDEN, and nothing else of the request applies', async () => {
    const { owner, unchanged } = await setup()
    const r = await t.req('PUT', '/v1/policies', { token: owner.token, body: { account: { daily_cap: 5, balance_cap: 1_000_000 } } })
    expect(r.status).toBe(403)
    expect(r.body.error).toBe('FORBIDDEN')
    expect(r.body.role).toContain('founder')
    await unchanged()
  })

  test("an unknown or another account's agent id → NOT_FOUND, all or nothing", async () => {
    const { owner, agent, unchanged } = await setup()
    const other = await setup()
    for (const id of [other.agent.id, 'agt_AAAAAAAAAAAAAAAAAAAAAA', 'nope']) {
      const r = await t.req('PUT', '/v1/policies', { token: owner.token, body: { account: { daily_cap: 1 }, agents: { [agent.id]: { daily_cap: 1 }, [id]: { daily_cap: 1 } } } })
      expect([id, r.status, r.body.error, r.body.agent_id]).toEqual([id, 404, 'NOT_FOUND', id])
    }
    await unchanged()
    await other.unchanged()
  })

  test('an agent id `__proto__` → NOT_FOUND like any unknown id (it answered 200, changing nothing)', async () => {
    const { owner, unchanged } = await setup()
    const r = await t.req('PUT', '/v1/policies', { token: owner.token, body: '{"account":{"daily_cap":1},"agents":{"__proto__":{"daily_cap":1}}}' })
    expect([r.status, r.body.error, r.body.agent_id]).toEqual([404, 'NOT_FOUND', '__proto__'])
    await unchanged()
  })

  test('a revoked agent → CONFLICT (revocation is permanent)', async () => {
    const { owner, agent } = await setup()
    await t.req('DELETE', `/v1/agents/${agent.id}`, { token: owner.token })
    const r = await t.req('PUT', '/v1/policies', { token: owner.token, body: { agents: { [agent.id]: { daily_cap: 1 } } } })
    expect(r.status).toBe(409)
    expect(r.body.error).toBe('CONFLICT')
  })

  test('malformed changes → BAD_REQUEST naming the field; nothing applies', async () => {
    const { owner, agent, unchanged } = await setup()
    const cases: [unknown, string][] = [
      [{ account: { daily_cap: -1 } }, 'account.daily_cap'],
      [{ account: { daily_cap: 'lots' } }, 'account.daily_cap'],
      [{ account: { allowlist: ['ok.slug', 'no spaces'] } }, 'account.allowlist.1'],
      [{ account: { allowlist: ['PROXY:openai'] } }, 'account.allowlist.0'],
      [{ account: { dailycap: 5 } }, 'account.dailycap'],
      [{ accounts: {} }, 'accounts'],
      [{ agents: { [agent.id]: { per_call_max: -3 } } }, `agents.${agent.id}.per_call_max`],
      [{ agents: { [agent.id]: { allowlist: ['a\nb'] } } }, `agents.${agent.id}.allowlist.0`],
      [{ agents: { [agent.id]: { balance_cap: 1 } } }, `agents.${agent.id}.balance_cap`],
      // A null where an object belongs: Elysia's normaliser drops it, so it used to answer 200, changing nothing.
      [{ account: null }, 'account'],
      [{ agents: { [agent.id]: null } }, `agents.${agent.id}`],
      [{ agents: { [agent.id]: { breaker: null } } }, `agents.${agent.id}.breaker`],
    ]
    for (const [body, field] of cases) {
      const r = await t.req('PUT', '/v1/policies', { token: owner.token, body })
      expect([JSON.stringify(body), r.status, r.body.error, r.body.field]).toEqual([JSON.stringify(body), 400, 'BAD_REQUEST', field])
    }
    await unchanged()
  })

  test('a non-object where an object belongs (a number, 1e309, a string, an array, true, null) → BAD_REQUEST naming it; nothing applies', async () => {
    const { owner, agent, unchanged } = await setup()
    const others = ['5', '1e309', '-1e309', '"x"', '[]', '[{"daily_cap":1}]', 'true', '0']
    const cases: [string, string][] = [
      ['{"account": 1e309, "agents": 1e309}', 'account'],
      ...others.map((v): [string, string] => [`{"account": ${v}}`, 'account']),
      ...[...others, 'null'].map((v): [string, string] => [`{"agents": ${v}}`, 'agents']),
      ...[...others, 'null'].map((v): [string, string] => [`{"agents": {"${agent.id}": ${v}}}`, `agents.${agent.id}`]),
      ...others.map((v): [string, string] => [`{"agents": {"${agent.id}": {"breaker": ${v}}}}`, `agents.${agent.id}.breaker`]),
      // Valid beside it does not make it pass: all or nothing.
      ['{"account": {"daily_cap": 1}, "agents": 1e309}', 'agents'],
    ]
    for (const [body, field] of cases) {
      const r = await t.req('PUT', '/v1/policies', { token: owner.token, body })
      expect([body, r.status, r.body.error, r.body.field]).toEqual([body, 400, 'BAD_REQUEST', field])
      expect(typeof r.body.expected, body).toBe('string')
    }
    await unchanged()
  })

  test('GET /v1/policies needs a bearer', async () => {
    expect((await t.req('GET', '/v1/policies')).status).toBe(401)
  })
})
