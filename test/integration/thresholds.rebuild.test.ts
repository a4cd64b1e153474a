/**
 * The account's warning levels (docs/api.md §13a) are part of its policy: the account_policies
 * projection in Postgres carries them, and the ledger rebuild restores them after Redis loses the
 * account — from Postgres, or from the outbox when the newest change was not flushed yet.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { accountPolicies } from '../../src/db/schema'
import { restoreMissing } from '../../src/recovery/rebuild'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

const levels = async (token: string) => (await t.req('GET', '/v1/policies', { token })).body.account.thresholds as number[]

async function loseAndRebuild(acct: string): Promise<void> {
  await t.redis.del(t.s.ctx.keys.account(acct))
  const summary = await restoreMissing(t.s.ctx, t.s.db.db)
  expect(summary.failed).toEqual([])
}

describe('thresholds survive a rebuild', () => {
  test('from the Postgres projection, then from the outbox; the default stays the default', async () => {
    const o = await t.signup()
    await t.req('PUT', '/v1/policies', { token: o.token, body: { account: { thresholds: [30, 90] } } })
    await flushAll(t)
    const [row] = await t.s.db.db.select().from(accountPolicies).where(eq(accountPolicies.accountId, o.account_id))
    expect(row).toMatchObject({ thresholds: '30,90', version: 1 })
    await loseAndRebuild(o.account_id)
    expect(await levels(o.token)).toEqual([30, 90])

    // Only in the outbox: off.
    await t.req('PUT', '/v1/policies', { token: o.token, body: { account: { thresholds: [] } } })
    await loseAndRebuild(o.account_id)
    expect(await levels(o.token)).toEqual([])
    // Still off when it matters: a crossing call tells nothing.
    await t.req('PUT', '/v1/policies', { token: o.token, body: { account: { daily_cap: 10 } } })
    expect((await t.req('POST', '/v1/call/test.echo', { token: o.token, body: { q: 'x' } })).status).toBe(200)
    await flushAll(t)
    const types = ((await t.req('GET', '/v1/events?limit=50', { token: o.token })).body.events as { type: string }[]).map((e) => e.type)
    expect(types).not.toContain('cap.threshold')

    const d = await t.signup()
    await t.req('PUT', '/v1/policies', { token: d.token, body: { account: { daily_cap: 100 } } })
    await flushAll(t)
    await loseAndRebuild(d.account_id)
    expect(await levels(d.token)).toEqual([50, 80, 100])
    expect(await t.redis.hexists(t.s.ctx.keys.account(d.account_id), 'thresholds')).toBe(0)
  })
})
