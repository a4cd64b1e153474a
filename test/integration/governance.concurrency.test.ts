/**
 * Caps under concurrency: every cap is checked and charged in the one debit script, so no burst,
 * however it interleaves, passes any cap by a single credit. The agent limit's live count is kept
 * by the scripts that create and revoke, so no interleaving of them drifts it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { hktDay } from '../../src/clock'
import { runRecountAgents } from '../../src/lua/agents'
import { startTestApp, type TestApp } from '../helpers/harness'
import { checkRedisInvariant, redisBalance } from '../helpers/ledger'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_PER_TOKEN: '100000', RATE_LIMIT_PER_IP: '100000' } })
})
afterAll(async () => {
  await t.close()
})

type Res = Awaited<ReturnType<TestApp['req']>>

async function newAgent(ownerToken: string, body: Record<string, unknown>) {
  const r = await t.req('POST', '/v1/agents', { token: ownerToken, body })
  expect(r.status).toBe(201)
  return r.body as { id: string; token: string }
}

describe('caps under concurrency', () => {
  test('8 agents racing their own caps (30) and the account cap (100) at once: no cap passed by a credit', async () => {
    const AGENTS = 8
    const AGENT_CAP = 30
    const ACCOUNT_CAP = 100
    const owner = await t.signup()
    await t.req('PUT', '/v1/policies', { token: owner.token, body: { account: { daily_cap: ACCOUNT_CAP } } })
    const fleet = await Promise.all(Array.from({ length: AGENTS }, (_, i) => newAgent(owner.token, { name: `racer-${i}`, daily_cap: AGENT_CAP })))

    // Each agent: 10 calls at 5 credits and 10 at 1 credit, all 160 requests in flight together.
    const jobs = fleet.flatMap((ag) => Array.from({ length: 20 }, (_, i) => ({ ag, slug: i % 2 === 0 ? 'test.echo' : 'test.cheap', price: i % 2 === 0 ? 5 : 1 })))
    const results: { ag: { id: string }; price: number; r: Res }[] = await Promise.all(
      jobs.map(async (j) => ({ ...j, r: await t.req('POST', `/v1/call/${j.slug}`, { token: j.ag.token, body: {} }) })),
    )

    const day = hktDay(t.clock.now())
    const { redis, keys } = t.s.ctx
    let total = 0
    for (const ag of fleet) {
      const spent = results.filter((x) => x.ag === ag && x.r.status === 200).reduce((s, x) => s + x.price, 0)
      expect(spent).toBeLessThanOrEqual(AGENT_CAP)
      const [spentDay, daySpent] = await redis.hmget(keys.agent(owner.account_id, ag.id), 'day', 'day_spent')
      expect(spentDay === String(day) ? Number(daySpent) : 0).toBe(spent)
      total += spent
    }
    expect(total).toBeLessThanOrEqual(ACCOUNT_CAP)
    // The fleet could spend 240: the account cap must have refused calls, so it was filled to
    // within one 5-credit call of the cap.
    expect(total).toBeGreaterThan(ACCOUNT_CAP - 5)
    expect(Number(await redis.get(keys.spentToday(owner.account_id, day)))).toBe(total)
    expect(await redisBalance(t, owner.account_id)).toBe(500 - total)
    await checkRedisInvariant(t, owner.account_id)

    // Every refusal is a cap refusal whose numbers justify it: spent + price > cap.
    for (const { r, price } of results.filter((x) => x.r.status !== 200)) {
      if (r.body.error === 'POLICY_DENIED') {
        expect(r.body.rule).toBe('agent_daily_cap')
        expect(r.body.cap).toBe(AGENT_CAP)
      } else {
        expect(r.body.error).toBe('DAILY_CAP_REACHED')
        expect(r.body.cap).toBe(ACCOUNT_CAP)
      }
      expect(r.body.spent + price).toBeGreaterThan(r.body.cap)
    }
    const listed = (await t.req('GET', '/v1/agents', { token: owner.token })).body.agents as { id: string; spent_today: number }[]
    expect(listed.reduce((s, x) => s + x.spent_today, 0)).toBe(total)
  })

  test('50 simultaneous first calls of a new agent: spend ≤ its cap (5-credit calls: exactly 2 of 50 pass a cap of 12)', async () => {
    const owner = await t.signup()
    const ag = await newAgent(owner.token, { name: 'fresh', daily_cap: 12 })
    const rs = await Promise.all(Array.from({ length: 50 }, () => t.req('POST', '/v1/call/test.echo', { token: ag.token, body: {} })))
    expect(rs.filter((r) => r.status === 200)).toHaveLength(2)
    expect(rs.filter((r) => r.body.rule === 'agent_daily_cap')).toHaveLength(48)
    expect(await redisBalance(t, owner.account_id)).toBe(490)
  })

  test('50 simultaneous first calls of a new agent at 1 credit: the cap of 12 is spent exactly, never passed', async () => {
    const owner = await t.signup()
    const ag = await newAgent(owner.token, { name: 'fresh-cheap', daily_cap: 12 })
    const rs = await Promise.all(Array.from({ length: 50 }, () => t.req('POST', '/v1/call/test.cheap', { token: ag.token, body: {} })))
    expect(rs.filter((r) => r.status === 200)).toHaveLength(12)
    const balances = rs.filter((r) => r.status === 200).map((r) => r.body.balance as number)
    expect(new Set(balances).size).toBe(12)
    expect(await redisBalance(t, owner.account_id)).toBe(488)
    await checkRedisInvariant(t, owner.account_id)
  })

  test('a kill racing a burst: once the kill has answered, not one more call of that agent is charged', async () => {
    const owner = await t.signup()
    const ag = await newAgent(owner.token, { name: 'runaway' })
    const burst = Array.from({ length: 40 }, () => t.req('POST', '/v1/call/test.cheap', { token: ag.token, body: {} }))
    const kill = await t.req('POST', `/v1/agents/${ag.id}/kill`, { token: owner.token })
    expect(kill.body.state).toBe('killed')
    const balanceAtKill = await redisBalance(t, owner.account_id)
    const rs = await Promise.all(burst)
    // Calls already debited when the kill landed finish; anything after it is refused.
    const after = await Promise.all(Array.from({ length: 20 }, () => t.req('POST', '/v1/call/test.cheap', { token: ag.token, body: {} })))
    expect(after.every((r) => r.body.error === 'AGENT_KILLED')).toBe(true)
    expect(await redisBalance(t, owner.account_id)).toBe(balanceAtKill)
    expect(rs.every((r) => r.status === 200 || r.body.error === 'AGENT_KILLED')).toBe(true)
  })

  test("the agent limit's live count under a burst of creates racing a revoke of their parent (and the first count of older agents) is the recount's", async () => {
    const owner = await t.signup()
    const root = await newAgent(owner.token, { name: 'root', budget: 1000 })
    const { keys } = t.s.ctx
    const live = async () => (await t.redis.zrange(keys.liveAgents(owner.account_id), 0, -1)).filter((m) => m !== '_').sort()
    // As if the account's agents were older than the live-agent set: the first creates count them.
    await t.redis.del(keys.liveAgents(owner.account_id))
    // Three streams of children and the operator's creates; the revoke lands once a few children exist.
    const made: Res[] = []
    const stream = async (n: number) => {
      for (let i = 0; i < n; i++) made.push(await t.req('POST', '/v1/agents', { token: root.token, body: { name: `c${i}`, budget: 1 } }))
    }
    const children = [stream(15), stream(15), stream(15)]
    const mine = Promise.all(Array.from({ length: 20 }, (_, i) => t.req('POST', '/v1/agents', { token: owner.token, body: { name: `o${i}` } })))
    while (made.length < 6) await Bun.sleep(1)
    const revoke = await t.req('DELETE', `/v1/agents/${root.id}`, { token: owner.token })
    expect(revoke.body.state).toBe('revoked')
    await Promise.all(children)
    expect((await mine).every((r) => r.status === 201)).toBe(true)
    expect(made.filter((r) => r.status === 201).length).toBeGreaterThanOrEqual(6)
    expect(made.filter((r) => r.body.error === 'AGENT_REVOKED').length).toBeGreaterThan(0)
    expect(made.every((r) => r.status === 201 || r.body.error === 'AGENT_REVOKED')).toBe(true)
    // The root's subtree is gone from the count, whenever each child was created; the operator's 20 stay.
    const kept = await live()
    expect(kept).toHaveLength(20)
    expect(await runRecountAgents(t.s.ctx, owner.account_id, { now: t.clock.now(), replace: true })).toBe(20)
    expect(await live()).toEqual(kept)
  })
})
