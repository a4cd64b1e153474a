/**
 * The agents and account_policies tables are projections of Redis, fed by the outbox. Entries may
 * arrive twice (crash between commit and ack) or late (a stale entry reclaimed from a dead
 * consumer after newer ones committed); neither may roll a row back.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { accountPolicies, agents } from '../../src/db/schema'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

/** Every outbox entry of a kind, as the flusher would read it (field list). */
async function entries(acct: string, kind: string): Promise<string[][]> {
  const { keys, redis } = t.s.ctx
  const rows = await redis.xrange(keys.outbox(keys.shardOf(acct)), '-', '+')
  return rows.map(([, f]) => f).filter((f) => f[f.indexOf('kind') + 1] === kind && f[f.indexOf('acct') + 1] === acct)
}

describe('governance projections', () => {
  test('an old agent entry delivered again after newer ones changes nothing; a repeat of the newest neither', async () => {
    const owner = await t.signup()
    const ag = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'p', daily_cap: 1 } })).body
    const [created] = await entries(owner.account_id, 'agent')
    await flushAll(t)
    await t.req('PUT', '/v1/policies', { token: owner.token, body: { agents: { [ag.id]: { daily_cap: 2 } } } })
    await t.req('DELETE', `/v1/agents/${ag.id}`, { token: owner.token })
    const newest = (await entries(owner.account_id, 'agent')).at(-1)!
    await flushAll(t)

    const { keys, redis } = t.s.ctx
    const outbox = keys.outbox(keys.shardOf(owner.account_id))
    const row = async () => (await t.s.db.db.select().from(agents).where(eq(agents.id, ag.id)))[0]
    await redis.xadd(outbox, '*', ...created!)
    await flushAll(t)
    expect(await row()).toMatchObject({ state: 'revoked', dailyCap: 2, version: 3 })
    await redis.xadd(outbox, '*', ...newest)
    await flushAll(t)
    expect(await row()).toMatchObject({ state: 'revoked', dailyCap: 2, version: 3 })
  })

  test('the same for the account policy', async () => {
    const owner = await t.signup()
    await t.req('PUT', '/v1/policies', { token: owner.token, body: { account: { daily_cap: 10 } } })
    const [first] = await entries(owner.account_id, 'account_policy')
    await t.req('PUT', '/v1/policies', { token: owner.token, body: { account: { daily_cap: 20, allowlist: ['test.*'] } } })
    await flushAll(t)
    const { keys, redis } = t.s.ctx
    await redis.xadd(keys.outbox(keys.shardOf(owner.account_id)), '*', ...first!)
    await flushAll(t)
    const [row] = await t.s.db.db.select().from(accountPolicies).where(eq(accountPolicies.accountId, owner.account_id))
    expect(row).toMatchObject({ dailyCap: 20, allowlist: ['test.*'], version: 2 })
  })
})
