/**
 * The paid-request pipeline's states (paid-request/): opened (debited, in flight) → settled
 * exactly once, charged or refunded by the outcome table — or, never settled, refunded by the
 * sweeper at its deadline. A second settle, whatever outcome it names, moves no money and answers
 * the first one's settlement.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Principal } from '../../src/auth/principal'
import { CALL_OUTCOMES, isRefunded, openPaidCall, type DebitedCall } from '../../src/paid-request'
import { startTestApp, type TestApp } from '../helpers/harness'
import { checkRedisInvariant, redisBalance } from '../helpers/ledger'
import { eventually } from '../helpers/proxy'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

async function opened(principal: Principal, opt: { lease?: boolean; price?: number; idempotencyKey?: string } = {}): Promise<DebitedCall> {
  const o = await openPaidCall(t.s, {
    principal,
    target: 'test.echo',
    price: opt.price ?? 5,
    unpriced: false,
    lease: opt.lease,
    idempotency: opt.idempotencyKey ? { key: opt.idempotencyKey, fingerprint: 'f' } : undefined,
  })
  if (o.kind !== 'debited') throw new Error(`open: ${o.kind}`)
  return o.call
}

async function account() {
  const a = await t.signup()
  return { ...a, principal: (await t.s.guard.tokens.resolve(a.token))! }
}

async function inFlight(accountId: string): Promise<string[]> {
  const shard = t.s.ctx.keys.shardOf(accountId)
  return (await t.s.ctx.redis.zrange(t.s.ctx.keys.inflight(shard), 0, -1)).filter((m) => m.startsWith(accountId))
}

describe('settle ends a call exactly once', () => {
  for (const outcome of CALL_OUTCOMES) {
    test(`${outcome}: ${isRefunded(outcome) ? 'refunded' : 'charged'}, filed with its word, out of flight`, async () => {
      const a = await account()
      const call = await opened(a.principal)
      expect(await inFlight(a.account_id)).toHaveLength(1)
      const s = await call.settle(outcome, { httpStatus: 200 })
      expect(s).toMatchObject({ outcome, refunded: isRefunded(outcome), balance: isRefunded(outcome) ? 500 : 495 })
      expect(await redisBalance(t, a.account_id)).toBe(s.balance)
      const act = await eventually(() => t.req('GET', '/v1/activity', { token: a.token }), (x) => x.body.calls?.length === 1)
      expect(act.body.calls[0]).toMatchObject({ call_id: call.callId, outcome, refunded: isRefunded(outcome), charged: isRefunded(outcome) ? 0 : 5, reserved: 5 })
      expect(await inFlight(a.account_id)).toHaveLength(0)
    })
  }

  test('a second settle, even with another outcome, answers the first and moves nothing', async () => {
    const a = await account()
    const call = await opened(a.principal)
    const [first, second] = await Promise.all([call.settle('provider_error'), call.settle('ok')])
    const third = await call.settle('ok')
    expect(second).toBe(first)
    expect(third).toBe(first)
    expect(first).toMatchObject({ outcome: 'provider_error', refunded: true, balance: 500 })
    const entries = await checkRedisInvariant(t, a.account_id)
    expect(entries.map((e) => e.kind)).toEqual(['grant', 'debit', 'refund'])
    const act = await eventually(() => t.req('GET', '/v1/activity', { token: a.token }), (x) => x.body.calls?.length >= 1)
    expect(act.body.calls).toHaveLength(1)
  })

  test('a charged call can no longer be refunded by a late settle', async () => {
    const a = await account()
    const call = await opened(a.principal, { idempotencyKey: 'k1' })
    await call.settle('ok', { replay: (balance) => JSON.stringify({ balance }) })
    await call.settle('network')
    expect(await redisBalance(t, a.account_id)).toBe(495)
  })

  test('the lease is held while in flight and released by the settle', async () => {
    const a = await account()
    const before = t.s.leases.size
    const call = await opened(a.principal, { lease: true })
    expect(t.s.leases.size).toBe(before + 1)
    await call.settle('client_closed')
    expect(t.s.leases.size).toBe(before)
    expect(await redisBalance(t, a.account_id)).toBe(495)
  })

  test('the referral bonus comes with the first ok settle and shows in its balance; a refunded call earns none', async () => {
    const referrer = await t.signup()
    const r = await t.signup(undefined, { referred_by: referrer.public_ref })
    const principal = (await t.s.guard.tokens.resolve(r.token))!
    await (await opened(principal)).settle('provider_error')
    expect(await redisBalance(t, referrer.account_id)).toBe(500)
    const s = await (await opened(principal)).settle('ok')
    expect(s.balance).toBe(995)
    expect(await redisBalance(t, referrer.account_id)).toBe(1000)
    await checkRedisInvariant(t, r.account_id)
  })

  test('never settled: the sweeper refunds the call at its deadline, once', async () => {
    const a = await account()
    const call = await opened(a.principal, { lease: true })
    call.leaveToSweeper()
    t.clock.advance(t.s.leases.leaseMs + 1)
    expect(await t.s.sweeper.sweepOnce()).toBeGreaterThanOrEqual(1)
    expect(await redisBalance(t, a.account_id)).toBe(500)
    // A settle arriving after the sweep moves no money.
    await call.settle('ok')
    expect(await redisBalance(t, a.account_id)).toBe(500)
    const entries = await checkRedisInvariant(t, a.account_id)
    expect(entries.map((e) => e.kind)).toEqual(['grant', 'debit', 'refund'])
  })
})
