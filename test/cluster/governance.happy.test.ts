/**
 * The governance scripts on a real 3-master Redis Cluster: every multi-key script and the
 * PUT /v1/policies transaction stay within one slot (the account's shard, or `{signups}`).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Cluster } from 'ioredis'
import { startTestApp, type TestApp } from '../helpers/harness'
import { assertLedger } from '../helpers/invariants'
import { startRedisCluster, type RedisCluster } from './cluster'

const ADMIN = 'founder-secret-0123456789abcdef'
let cluster: RedisCluster
let t: TestApp
beforeAll(async () => {
  cluster = await startRedisCluster(3)
  t = await startTestApp({ env: { REDIS_CLUSTER_NODES: cluster.nodes, SIGNUP_ALARM_PER_HOUR: '4', ADMIN_TOKEN: ADMIN } })
})
afterAll(async () => {
  await t?.close()
  await cluster?.stop()
})

describe('governance on a 3-master Redis Cluster', () => {
  test('agents: create, call under caps, kill, revive, revoke; policies of the account and two agents at once', async () => {
    expect(t.s.ctx.redis).toBeInstanceOf(Cluster)
    const owner = await t.signup()
    const mk = async (name: string) => (await t.req('POST', '/v1/agents', { token: owner.token, body: { name, daily_cap: 6 } })).body
    const [x, y] = [await mk('x'), await mk('y')]
    const call = (token: string, slug = 'test.echo') => t.req('POST', `/v1/call/${slug}`, { token, body: {} })

    expect((await call(x.token)).status).toBe(200)
    expect((await call(x.token)).body.rule).toBe('agent_daily_cap')
    const put = await t.req('PUT', '/v1/policies', {
      token: owner.token,
      body: { account: { daily_cap: 9 }, agents: { [x.id]: { daily_cap: 20 }, [y.id]: { allowlist: ['test.cheap'] } } },
    })
    expect(put.status, put.text).toBe(200)
    expect((await call(y.token)).body.rule).toBe('agent_allowlist')
    expect((await call(x.token)).body.error).toBe('DAILY_CAP_REACHED')

    await t.req('POST', `/v1/agents/${y.id}/kill`, { token: owner.token })
    expect((await call(y.token, 'test.cheap')).body.error).toBe('AGENT_KILLED')
    await t.req('POST', `/v1/agents/${y.id}/revive`, { token: owner.token })
    expect((await call(y.token, 'test.cheap')).status).toBe(200)
    await t.req('DELETE', `/v1/agents/${y.id}`, { token: owner.token })
    expect((await call(y.token, 'test.cheap')).body.error).toBe('AGENT_REVOKED')

    const cap = await t.req('PUT', `/admin/accounts/${owner.account_id}/balance-cap`, { token: ADMIN, body: { balance_cap: 1234 } })
    expect(cap.body).toMatchObject({ balance_cap: 1234, balance: 494 })
    // Agents created in the same millisecond list in id order, so compare by id, not position.
    const listed = (await t.req('GET', '/v1/agents', { token: owner.token })).body.agents as { id: string; spent_today: number }[]
    expect(Object.fromEntries(listed.map((a) => [a.id, a.spent_today]))).toEqual({ [x.id]: 5, [y.id]: 1 })
    await assertLedger(t.s, [{ account: owner.account_id, balance: 494 }])
  })

  test('the signup alarm trips and resumes in its {signups} slot', async () => {
    // One signup so far in this file; the alarm is 4 per hour.
    for (let i = 0; i < 3; i++) await t.signup()
    expect((await t.req('POST', '/v1/signup', { body: { email: `over-${t.prefix}@example.com` } })).body.error).toBe('SIGNUPS_PAUSED')
    expect((await t.req('GET', '/status')).body.signups).toBe('paused')
    expect((await t.req('POST', '/admin/signups/resume', { token: ADMIN })).body.signups).toBe('open')
    expect((await t.req('POST', '/v1/signup', { body: { email: `over-${t.prefix}@example.com` } })).status).toBe(201)
  })
})
