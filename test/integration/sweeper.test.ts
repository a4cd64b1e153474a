/**
 * A call cut off by a crash — debited, then never answered — is refunded by the sweeper once its
 * deadline passes, its Idempotency-Key is freed, and it shows in activity as abandoned.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { debit } from '../../src/ledger/debit'
import { startTestApp, type TestApp } from '../helpers/harness'
import { checkRedisInvariant, redisBalance } from '../helpers/ledger'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

async function principalOf(token: string) {
  return (await t.s.guard.tokens.resolve(token))!
}

describe('the abandoned-call sweeper', () => {
  test('a debit never answered is refunded after its deadline, once, with the key freed', async () => {
    const a = await t.signup()
    const principal = await principalOf(a.token)
    // The process "dies" right after the debit: no upstream, no record, no refund.
    const d = await debit(t.s.ctx, { principal, target: 'test.echo', price: 5, unpriced: false, idempotency: { key: 'cut', fingerprint: 'fp' }, abandonAfterMs: 60_000 })
    expect(d.kind).toBe('debited')
    expect(await redisBalance(t, a.account_id)).toBe(495)
    // Before the deadline nothing happens; the key is still in flight.
    expect(await t.s.sweeper.sweepOnce()).toBe(0)
    t.clock.advance(60_001)
    expect(await t.s.sweeper.sweepOnce()).toBe(1)
    expect(await t.s.sweeper.sweepOnce()).toBe(0)
    expect(await redisBalance(t, a.account_id)).toBe(500)
    const entries = await checkRedisInvariant(t, a.account_id)
    expect(entries.map((e) => e.kind)).toEqual(['grant', 'debit', 'refund'])
    const act = await t.req('GET', '/v1/activity', { token: a.token })
    expect(act.body.calls).toHaveLength(1)
    expect(act.body.calls[0]).toMatchObject({ slug: 'test.echo', outcome: 'abandoned', refunded: true })
    // The Idempotency-Key is free again.
    expect(await t.s.ctx.redis.exists(t.s.ctx.keys.idempotency(a.account_id, null, 'cut'))).toBe(0)
  })

  test('answered calls leave the in-flight set: the sweeper never refunds a success or a refunded failure', async () => {
    const a = await t.signup()
    await t.req('POST', '/v1/call/test.echo', { token: a.token, body: {} })
    await t.req('POST', '/v1/call/test.fail', { token: a.token, body: {} })
    await t.req('POST', '/v1/call/test.bad', { token: a.token, body: {} })
    await Bun.sleep(20)
    t.clock.advance(24 * 3600_000)
    await t.s.sweeper.sweepOnce()
    expect(await redisBalance(t, a.account_id)).toBe(490)
    const shard = t.s.ctx.keys.shardOf(a.account_id)
    const left = await t.s.ctx.redis.zrange(t.s.ctx.keys.inflight(shard), 0, -1)
    expect(left.filter((m) => m.startsWith(a.account_id))).toEqual([])
  })

  test('a filed call keeps its record minutes, not days: Redis holds recent calls only', async () => {
    const a = await t.signup()
    const ok = await t.req('POST', '/v1/call/test.echo', { token: a.token, body: {} })
    const failed = await t.req('POST', '/v1/call/test.fail', { token: a.token, body: {} })
    const principal = await principalOf(a.token)
    const open = await debit(t.s.ctx, { principal, target: 'test.echo', price: 5, unpriced: false })
    if (open.kind !== 'debited') throw new Error(open.kind)
    await Bun.sleep(20) // the call records are filed just after the answers
    const ttl = (callId: string) => t.s.ctx.redis.ttl(t.s.ctx.keys.call(a.account_id, callId))
    for (const filed of [ok.body.call_id, failed.body.call_id]) {
      expect(await ttl(filed)).toBeGreaterThan(0)
      expect(await ttl(filed)).toBeLessThanOrEqual(300)
    }
    // A call still in flight keeps two days: a refund may yet come for it.
    expect(await ttl(open.callId)).toBeGreaterThan(86400)
  })

  test('two sweepers racing: one refund, one activity record', async () => {
    const a = await t.signup()
    const principal = await principalOf(a.token)
    for (let i = 0; i < 5; i++) await debit(t.s.ctx, { principal, target: 'test.cheap', price: 1, unpriced: false, abandonAfterMs: 1000 })
    t.clock.advance(1001)
    const { AbandonedCallSweeper } = await import('../../src/ledger/sweeper')
    const other = new AbandonedCallSweeper(t.s.ctx)
    const [x, y] = await Promise.all([t.s.sweeper.sweepOnce(), other.sweepOnce()])
    expect(x + y).toBe(5)
    expect(await redisBalance(t, a.account_id)).toBe(500)
    await checkRedisInvariant(t, a.account_id)
    const act = await t.req('GET', '/v1/activity', { token: a.token })
    expect(act.body.calls).toHaveLength(5)
  })
})
