/**
 * Run budgets (docs/api.md §13c) through HTTP: `X-Budget-Run` on an agent's paid call opens a run
 * on first use and counts every call that carries it against its max, in the debit itself, as one
 * more level of the chain; refunds give back; the run ends at its TTL; GET /v1/runs lists them.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll, pgLedger, redisBalance } from '../helpers/ledger'
import { debit } from '../../src/paid-request/debit'
import { ConsoleClient } from '../helpers/console'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

const create = (token: string, body: Record<string, unknown>) => t.req('POST', '/v1/agents', { token, body })
const call = (token: string, run?: string, slug = 'test.echo') =>
  t.req('POST', `/v1/call/${slug}`, { token, body: { q: 'x' }, headers: run === undefined ? {} : { 'X-Budget-Run': run } })
const runs = async (token: string): Promise<Record<string, any>[]> => {
  const r = await t.req('GET', '/v1/runs', { token })
  expect(r.status).toBe(200)
  return r.body.runs
}
const runOf = async (token: string, id: string) => (await runs(token)).find((r) => r.id === id)
const agentsById = async (owner: string): Promise<Record<string, any>> =>
  Object.fromEntries(((await t.req('GET', '/v1/agents', { token: owner })).body.agents as { id: string }[]).map((a) => [a.id, a]))

describe('run budgets', () => {
  test('the first call opens the run; each call counts; past max it is POLICY_DENIED run_budget; a later max is ignored', async () => {
    const owner = await t.signup()
    const agent = (await create(owner.token, { name: 'worker' })).body
    const first = await call(agent.token, 'job-1; max=12; ttl=600')
    expect(first.status).toBe(200)
    expect(first.body.run).toMatchObject({ id: 'job-1', max: 12, spent: 5 })
    expect(Date.parse(first.body.run.expires_at)).toBe(t.clock.now() + 600_000)
    // A later, larger max changes nothing: the run's max was fixed at its opening.
    const second = await call(agent.token, 'job-1; max=1000')
    expect(second.body.run).toMatchObject({ id: 'job-1', max: 12, spent: 10 })
    const balance = await redisBalance(t, owner.account_id)
    const denied = await call(agent.token, 'job-1;max=12')
    expect(denied.status).toBe(403)
    expect(denied.body).toMatchObject({ error: 'POLICY_DENIED', rule: 'run_budget', run_id: 'job-1', reason: 'exhausted', max: 12, spent: 10 })
    expect(await redisBalance(t, owner.account_id)).toBe(balance)
    // A cheaper call still fits what the run has left; calls without the header are not the run's.
    expect((await call(agent.token, 'job-1; max=12', 'test.cheap')).body.run).toMatchObject({ spent: 11 })
    expect((await call(agent.token)).status).toBe(200)
    const listed = await runs(owner.token)
    expect(listed).toEqual([
      { id: 'job-1', agent_id: agent.id, max: 12, spent: 11, opened_at: new Date(t.clock.now()).toISOString(), expires_at: first.body.run.expires_at, state: 'open', released: null },
    ])
    expect(await runs(agent.token)).toEqual(listed)
  })

  test('a refunded call gives the run its credits back', async () => {
    const owner = await t.signup()
    const agent = (await create(owner.token, { name: 'worker' })).body
    expect((await call(agent.token, 'r; max=10')).status).toBe(200)
    const failed = await call(agent.token, 'r; max=10', 'test.fail')
    expect(failed.body.error).toBe('PROVIDER_ERROR')
    expect((await runOf(owner.token, 'r'))!.spent).toBe(5)
    expect((await call(agent.token, 'r; max=10')).body.run.spent).toBe(10)
  })

  test('a call cut off after its debit (an API crash) is refunded by the sweeper, and its run gets the price back', async () => {
    const owner = await t.signup()
    const agent = (await create(owner.token, { name: 'worker' })).body
    const principal = (await t.s.guard.tokens.resolve(agent.token))!
    const d = await debit(t.s.ctx, { principal, target: 'test.echo', price: 5, unpriced: false, abandonAfterMs: 60_000, run: { id: 'crash', max: 20, ttlS: 3600 } })
    expect(d.kind === 'debited' && d.run).toMatchObject({ id: 'crash', spent: 5 })
    expect((await runOf(owner.token, 'crash'))!.spent).toBe(5)
    t.clock.advance(60_001)
    expect(await t.s.sweeper.sweepOnce()).toBeGreaterThanOrEqual(1)
    expect((await runOf(owner.token, 'crash'))!.spent).toBe(0)
    expect(await redisBalance(t, owner.account_id)).toBe(500)
  })

  test('a debit resent after a lost reply charges the run once, and its refund still finds the run', async () => {
    const owner = await t.signup()
    const agent = (await create(owner.token, { name: 'worker' })).body
    // ioredis resends a script whose reply a dropped connection swallowed: here every debit runs twice.
    const original = t.s.ctx.scripts.debit
    t.s.ctx.scripts.debit = async (keys, argv) => {
      await original(keys, argv)
      return original(keys, argv)
    }
    try {
      const ok = await call(agent.token, 'resent; max=20')
      expect(ok.status).toBe(200)
      const failed = await call(agent.token, 'resent; max=20', 'test.fail')
      expect(failed.body).toMatchObject({ error: 'PROVIDER_ERROR', refunded: true })
    } finally {
      t.s.ctx.scripts.debit = original
    }
    expect((await runOf(owner.token, 'resent'))!.spent).toBe(5)
    expect(await redisBalance(t, owner.account_id)).toBe(495)
  })

  test('the run ends at its TTL: refused as ended, listed as ended with what it did not spend; the agent spends on', async () => {
    const owner = await t.signup()
    const agent = (await create(owner.token, { name: 'worker', daily_cap: 40 })).body
    expect((await call(agent.token, 'short; max=30; ttl=60')).status).toBe(200)
    // Kept a week past its end: its TTL counts from its opening, on the app's clock.
    const key = t.s.ctx.keys.run(owner.account_id, 'short')
    const ttl = await t.redis.pttl(key)
    expect(ttl).toBeGreaterThan(60_000 + 7 * 86400_000 - 5_000)
    expect(ttl).toBeLessThanOrEqual(60_000 + 7 * 86400_000)
    t.clock.advance(59_999)
    expect((await call(agent.token, 'short; max=30; ttl=60')).body.run.spent).toBe(10)
    t.clock.advance(1)
    const ended = await call(agent.token, 'short; max=30; ttl=60')
    expect(ended.status).toBe(403)
    expect(ended.body).toMatchObject({ rule: 'run_budget', run_id: 'short', reason: 'ended', max: 30, spent: 10 })
    expect(await runOf(owner.token, 'short')).toMatchObject({ state: 'ended', spent: 10, released: 20 })
    // The run held nothing of the agent's: its daily cap has 30 left, all of it spendable now.
    for (let i = 0; i < 6; i++) expect((await call(agent.token)).status).toBe(200)
    expect((await call(agent.token)).body.rule).toBe('agent_daily_cap')
    // Once its record is gone (a week past its end), the listing leaves it out, though the index still names it.
    expect(await t.redis.zscore(t.s.ctx.keys.runs(owner.account_id), 'short')).not.toBeNull()
    await t.redis.del(key)
    expect(await runOf(owner.token, 'short')).toBeUndefined()
  })

  test('a depth-4 agent runs under a run: every ancestor is charged, the run bounds it, the tree sees it', async () => {
    const owner = await t.signup()
    const root = (await create(owner.token, { name: 'root', budget: 400 })).body
    const c2 = (await create(root.token, { name: 'c2', budget: 300 })).body
    const c3 = (await create(c2.token, { name: 'c3', budget: 200 })).body
    const c4 = (await create(c3.token, { name: 'c4', budget: 100 })).body
    expect(c4.depth).toBe(4)
    const sibling = (await create(root.token, { name: 'sibling', budget: 50 })).body
    for (let i = 0; i < 3; i++) expect((await call(c4.token, 'deep; max=15')).status).toBe(200)
    const over = await call(c4.token, 'deep; max=15')
    expect(over.body).toMatchObject({ rule: 'run_budget', run_id: 'deep', reason: 'exhausted' })
    const tree = await agentsById(owner.token)
    expect([c4.id, c3.id, c2.id, root.id].map((id) => tree[id].spent_total)).toEqual([15, 15, 15, 15])
    // The run is c4's: c4 and every ancestor list it; a sibling's subtree does not hold it, nor may it spend from it.
    for (const token of [owner.token, root.token, c2.token, c3.token, c4.token]) expect((await runOf(token, 'deep'))?.agent_id).toBe(c4.id)
    expect(await runOf(sibling.token, 'deep')).toBeUndefined()
    const foreign = await call(sibling.token, 'deep; max=15')
    expect(foreign.body).toMatchObject({ error: 'POLICY_DENIED', rule: 'run_budget', reason: 'other_agent' })
    // An ancestor's run covers its descendants' calls that carry it: c4 spends from c2's run.
    expect((await call(c2.token, 'team; max=8')).status).toBe(200)
    expect((await call(c4.token, 'team; max=8')).body.rule).toBe('run_budget')
    expect((await call(c4.token, 'team; max=8', 'test.cheap')).body.run).toMatchObject({ id: 'team', spent: 6 })
    // The agent's own budget still binds below a generous run, and a refused call opens nothing.
    expect((await call(c4.token, 'huge; max=100000', 'test.pricey')).body).toMatchObject({ rule: 'agent_budget' })
    expect(await runOf(owner.token, 'huge')).toBeUndefined()
  })

  test('the console lists the runs on the Agents page: agent, spent of max, open or ended with what it left', async () => {
    const owner = await t.signup()
    const agent = (await create(owner.token, { name: 'console-runner' })).body
    const c = new ConsoleClient(t)
    expect((await c.signIn(owner.token)).status).toBeLessThan(400)
    expect((await c.get('/console/agents')).text).toContain('No runs.')
    expect((await call(agent.token, 'night<b>; max=9')).status).toBe(400)
    expect((await call(agent.token, 'nightly; max=9; ttl=30')).status).toBe(200)
    expect((await call(agent.token, 'weekly; max=1000')).status).toBe(200)
    t.clock.advance(30_000)
    const html = (await c.get('/console/agents')).text
    const rowOf = (id: string) => new RegExp(`<tr data-run="${id}">([\\s\\S]*?)</tr>`).exec(html)?.[1] ?? ''
    expect(rowOf('nightly')).toContain('console-runner')
    expect(rowOf('nightly')).toContain('5 of 9')
    expect(rowOf('nightly')).toContain('ended')
    expect(rowOf('nightly')).toContain('4 unspent')
    expect(rowOf('weekly')).toContain('5 of 1,000')
    expect(rowOf('weekly')).toContain('open')
  })

  test('a max above what the agent may spend: the agent\'s own limit applies', async () => {
    const owner = await t.signup()
    const agent = (await create(owner.token, { name: 'w', daily_cap: 10 })).body
    expect((await call(agent.token, 'big; max=100000')).status).toBe(200)
    expect((await call(agent.token, 'big; max=100000')).status).toBe(200)
    const capped = await call(agent.token, 'big; max=100000')
    expect(capped.body).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_daily_cap' })
    expect((await runOf(owner.token, 'big'))!.spent).toBe(10)
  })

  test('60 concurrent calls across three runs of one agent: each run within its max, the agent cap holds, Σ exact', async () => {
    const owner = await t.signup()
    const agent = (await create(owner.token, { name: 'fleet', daily_cap: 150 })).body
    const maxes: Record<string, number> = { a: 60, b: 45, c: 100 }
    const before = await redisBalance(t, owner.account_id)
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) => {
        const id = 'abc'[i % 3]!
        return call(agent.token, `${id}; max=${maxes[id]}`)
      }),
    )
    const ok = answers.filter((a) => a.status === 200)
    for (const a of answers) if (a.status !== 200) expect(['run_budget', 'agent_daily_cap']).toContain(a.body.rule)
    const listed = Object.fromEntries((await runs(owner.token)).map((r) => [r.id, r]))
    let sum = 0
    for (const id of ['a', 'b', 'c']) {
      expect(listed[id].spent).toBeLessThanOrEqual(maxes[id]!)
      expect(listed[id].spent).toBe(ok.filter((a) => a.body.run.id === id).length * 5)
      sum += listed[id].spent
    }
    expect(sum).toBe(ok.length * 5)
    expect(sum).toBeLessThanOrEqual(150)
    // The runs could pass 41 calls together; the agent's cap (150 = 30 calls) stops the rest: a call is
    // refused by its run only once that run is full, so fewer than 30 would mean all three were.
    expect(ok.length).toBe(30)
    expect((await agentsById(owner.token))[agent.id].spent_today).toBe(sum)
    expect(await redisBalance(t, owner.account_id)).toBe(before - sum)
    await flushAll(t)
    const pg = await pgLedger(t, owner.account_id)
    expect(pg.sum).toBe(before - sum)
  })
})
