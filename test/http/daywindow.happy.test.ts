/**
 * Daily windows are HKT days (UTC+8): 15:59:59.999 UTC is the last millisecond of one day,
 * 16:00:00.000 UTC the first of the next. Windowed keys, no reset job: the old day's spend stays
 * where it was (until its expiry) and the new day starts from zero.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { hktDay } from '../../src/clock'
import { startTestApp, type TestApp } from '../helpers/harness'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

const LAST_MS = Date.UTC(2026, 2, 9, 15, 59, 59, 999)
const FIRST_MS = Date.UTC(2026, 2, 9, 16, 0, 0, 0)

describe('the HKT day boundary', () => {
  test('a call at 15:59:59.999 UTC counts in one day, a call at 16:00:00.000 UTC in the next', async () => {
    expect(hktDay(FIRST_MS)).toBe(hktDay(LAST_MS) + 1)
    t.clock.set(LAST_MS)
    const owner = await t.signup()
    const agent = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'night', daily_cap: 5 } })).body
    await t.req('PUT', '/v1/policies', { token: owner.token, body: { account: { daily_cap: 10 } } })
    const call = (slug: string, token: string) => t.req('POST', `/v1/call/${slug}`, { token, body: {} })

    // Day 1, last millisecond: both caps fill up.
    expect((await call('test.echo', agent.token)).status).toBe(200)
    const agentDenied = await call('test.echo', agent.token)
    expect(agentDenied.body).toMatchObject({ rule: 'agent_daily_cap', cap: 5, spent: 5, resets_at: '2026-03-09T16:00:00.000Z' })
    expect((await call('test.echo', owner.token)).status).toBe(200)
    const accountDenied = await call('test.cheap', owner.token)
    expect(accountDenied.body).toMatchObject({ error: 'DAILY_CAP_REACHED', cap: 10, spent: 10, resets_at: '2026-03-09T16:00:00.000Z' })
    expect((await t.req('GET', '/v1/agents', { token: owner.token })).body.agents[0].spent_today).toBe(5)
    expect((await t.req('GET', '/v1/balance', { token: owner.token })).body).toMatchObject({ spent_today: 10, resets_at: '2026-03-09T16:00:00.000Z' })

    // Day 2, first millisecond: fresh windows, same caps.
    t.clock.set(FIRST_MS)
    expect((await t.req('GET', '/v1/agents', { token: owner.token })).body.agents[0].spent_today).toBe(0)
    expect((await t.req('GET', '/v1/balance', { token: owner.token })).body).toMatchObject({ spent_today: 0, resets_at: '2026-03-10T16:00:00.000Z' })
    expect((await call('test.echo', agent.token)).status).toBe(200)
    expect((await call('test.echo', agent.token)).body).toMatchObject({ rule: 'agent_daily_cap', spent: 5, resets_at: '2026-03-10T16:00:00.000Z' })
    expect((await call('test.echo', owner.token)).status).toBe(200)
    expect((await call('test.cheap', owner.token)).body).toMatchObject({ error: 'DAILY_CAP_REACHED', spent: 10, resets_at: '2026-03-10T16:00:00.000Z' })

    // Nothing was lost or moved: each day holds exactly its own spend (the agent's hash keeps the
    // current day's only: day 1's 5 was read above, day 2's replaced it).
    const { keys, redis } = t.s.ctx
    expect(await redis.get(keys.spentToday(owner.account_id, hktDay(LAST_MS)))).toBe('10')
    expect(await redis.get(keys.spentToday(owner.account_id, hktDay(FIRST_MS)))).toBe('10')
    expect(await redis.hmget(keys.agent(owner.account_id, agent.id), 'day', 'day_spent')).toEqual([String(hktDay(FIRST_MS)), '5'])
    expect(await redis.ttl(keys.spentToday(owner.account_id, hktDay(LAST_MS)))).toBeGreaterThan(0)
    expect((await t.req('GET', '/v1/balance', { token: owner.token })).body.balance).toBe(500 - 20)
  })
})
