/**
 * An Idempotency-Key belongs to the token that sent it (each agent, and the owner, is its own
 * scope), and a replay passes the same gates as a fresh call (agent state, rate limit, allowlists)
 * before its stored answer is served: another token never reads an answer it was not given.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { checkRedisInvariant, redisBalance } from '../helpers/ledger'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_PER_TOKEN: '5' } })
  // The start of a minute, so that five requests of one test stay in one rate window.
  t.clock.set(Math.ceil(Date.now() / 60_000) * 60_000 + 1_000)
})
afterAll(async () => {
  await t.close()
})

const call = (token: string, key: string, body: unknown, slug = 'test.echo') =>
  t.req('POST', `/v1/call/${slug}`, { token, body, headers: { 'idempotency-key': key } })

async function ownerWithAgents(n: number) {
  const owner = await t.signup()
  const agents: { id: string; token: string }[] = []
  for (let i = 0; i < n; i++) {
    const r = await t.req('POST', '/v1/agents', { token: owner.token, body: { name: `a${i}` } })
    expect(r.status).toBe(201)
    agents.push(r.body)
  }
  return { owner, agents }
}

describe('Idempotency-Key scope and gates', () => {
  test("agent X sending agent Y's key gets its own fresh call, never Y's answer", async () => {
    const { owner, agents: [x, y] } = await ownerWithAgents(2)
    const ys = await call(y!.token, 'shared-key', { q: 'secret of y' })
    expect(ys.status).toBe(200)
    const xs = await call(x!.token, 'shared-key', { q: 'secret of y' })
    expect(xs.status).toBe(200)
    expect(xs.body.call_id).not.toBe(ys.body.call_id)
    // Both ran upstream and both were charged.
    expect(t.fake.seen.filter((s) => s.body === '{"q":"secret of y"}')).toHaveLength(2)
    expect(await redisBalance(t, owner.account_id)).toBe(490)
    // Each token's own replay still answers its own first call, charged once.
    expect((await call(x!.token, 'shared-key', { q: 'secret of y' })).body.call_id).toBe(xs.body.call_id)
    expect((await call(y!.token, 'shared-key', { q: 'secret of y' })).body.call_id).toBe(ys.body.call_id)
    expect(await redisBalance(t, owner.account_id)).toBe(490)
    await checkRedisInvariant(t, owner.account_id)
  })

  test('the owner token is its own scope: its key does not replay to an agent, nor an agent\'s to it', async () => {
    const { owner, agents: [a] } = await ownerWithAgents(1)
    const mine = await call(owner.token, 'k', { q: 'o' })
    const agents = await call(a!.token, 'k', { q: 'o' })
    expect(agents.status).toBe(200)
    expect(agents.body.call_id).not.toBe(mine.body.call_id)
    // Different bodies under one key in two scopes are two requests, not a CONFLICT.
    expect((await call(a!.token, 'k2', { q: 'one' })).status).toBe(200)
    expect((await call(owner.token, 'k2', { q: 'two' })).status).toBe(200)
    expect(await redisBalance(t, owner.account_id)).toBe(480)
  })

  test("an agent whose allowlist lacks the slug replaying another agent's key → POLICY_DENIED", async () => {
    const { owner, agents: [x, y] } = await ownerWithAgents(2)
    const put = await t.req('PUT', '/v1/policies', { token: owner.token, body: { agents: { [x!.id]: { allowlist: ['test.cheap'] } } } })
    expect(put.status).toBe(200)
    expect((await call(y!.token, 'y-key', { q: 'y' })).status).toBe(200)
    const r = await call(x!.token, 'y-key', { q: 'y' })
    expect(r.status).toBe(403)
    expect(r.body).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_allowlist' })
    expect(r.body.result).toBeUndefined()
  })

  test('an agent denied the slug since its first call does not get the stored answer replayed', async () => {
    const { owner, agents: [a] } = await ownerWithAgents(1)
    expect((await call(a!.token, 'before', { q: 'b' })).status).toBe(200)
    await t.req('PUT', '/v1/policies', { token: owner.token, body: { agents: { [a!.id]: { allowlist: ['test.cheap'] } } } })
    const r = await call(a!.token, 'before', { q: 'b' })
    expect(r.status).toBe(403)
    expect(r.body.error).toBe('POLICY_DENIED')
  })

  test('a killed agent replaying its own key → AGENT_KILLED', async () => {
    const { owner, agents: [a] } = await ownerWithAgents(1)
    expect((await call(a!.token, 'k', { q: 'k' })).status).toBe(200)
    await t.req('POST', `/v1/agents/${a!.id}/kill`, { token: owner.token })
    expect((await call(a!.token, 'k', { q: 'k' })).body.error).toBe('AGENT_KILLED')
  })

  test('replays count against the rate limit and are refused past it', async () => {
    const a = await t.signup()
    const first = await call(a.token, 'rl', { q: 'r' })
    expect(first.status).toBe(200)
    const rs = []
    for (let i = 0; i < 5; i++) rs.push(await call(a.token, 'rl', { q: 'r' }))
    expect(rs.slice(0, 4).map((r) => r.status)).toEqual([200, 200, 200, 200])
    expect(rs[4]!.status).toBe(429)
    expect(rs[4]!.body.error).toBe('RATE_LIMITED')
    expect(await redisBalance(t, a.account_id)).toBe(495)
  })
})
