/**
 * Proposals come back with the ledger rebuild: after the account's Redis keys are lost, every
 * proposal is restored from Postgres and the unflushed outbox (newest version wins), the pending
 * ones indexed again — so they can still be decided, and still count against the 10-pending limit.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'
import { restoreMissing } from '../../src/recovery/rebuild'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

describe('ledger rebuild and proposals', () => {
  test('decided and pending proposals, flushed or not, are restored; a restored pending one is decided as before', async () => {
    const o = await t.signup()
    const a = (await t.req('POST', '/v1/agents', { token: o.token, body: { name: 'a', daily_cap: 5 } })).body
    const ask = async (reason: string) => (await t.req('POST', '/v1/proposals', { token: a.token, body: { kind: 'raise_daily_cap', value: 40, reason } })).body
    const declined = await ask('declined before the flush')
    await t.req('POST', `/v1/proposals/${declined.id}/decline`, { token: o.token })
    const flushedPending = await ask('pending, flushed')
    const others: { id: string }[] = []
    for (let i = 0; i < 7; i++) others.push(await ask(`filler ${i}`))
    await flushAll(t)
    // Not flushed yet: a newer version (the decline) and a new proposal live only in the outbox.
    await t.req('POST', `/v1/proposals/${others[0]!.id}/decline`, { token: o.token })
    const unflushed = await ask('pending, only in the outbox')
    const before = (await t.req('GET', '/v1/proposals', { token: o.token })).body.proposals

    const { keys } = t.s.ctx
    await t.redis.del(keys.account(o.account_id), keys.proposals(o.account_id), keys.pendingProposals(o.account_id))
    const summary = await restoreMissing(t.s.ctx, t.s.db.db)
    expect(summary.failed).toEqual([])

    const after = (await t.req('GET', '/v1/proposals', { token: o.token })).body.proposals
    expect(after).toEqual(before)
    expect(after.find((p: { id: string }) => p.id === others[0]!.id).status).toBe('declined')
    expect(after.find((p: { id: string }) => p.id === unflushed.id).status).toBe('pending')

    // Still 8 pending for the agent: two more fit, the eleventh does not.
    for (const reason of ['ninth', 'tenth']) expect((await t.req('POST', '/v1/proposals', { token: a.token, body: { kind: 'raise_daily_cap', value: 1, reason } })).status).toBe(201)
    expect((await t.req('POST', '/v1/proposals', { token: a.token, body: { kind: 'raise_daily_cap', value: 1, reason: 'eleventh' } })).status).toBe(429)
    // A restored pending proposal is approved and takes effect; a restored decided one stays decided.
    expect((await t.req('POST', `/v1/proposals/${flushedPending.id}/approve`, { token: o.token })).body.status).toBe('approved')
    expect((await t.req('GET', '/v1/policies', { token: o.token })).body.agents[a.id].daily_cap).toBe(40)
    expect((await t.req('POST', `/v1/proposals/${declined.id}/approve`, { token: o.token })).body).toMatchObject({ error: 'CONFLICT', status: 'declined' })
  })
})
