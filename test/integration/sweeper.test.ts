/**
 * A call cut off by a crash — debited, then never answered — is refunded by the sweeper once its
 * deadline passes, its Idempotency-Key is freed, and it shows in activity as abandoned.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { debit } from '../../src/paid-request/debit'
import { AbandonedCallSweeper } from '../../src/paid-request/sweeper'
import type { RedisContext } from '../../src/redis/context'
import { startTestApp, type TestApp } from '../helpers/harness'
import { checkRedisInvariant, redisBalance } from '../helpers/ledger'
import { openMeteredCall, openModelCall } from '../helpers/metering'

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

  test('an abandoned metered call is filed as its settle would file it: the route as slug, its model and reservation', async () => {
    const a = await t.signup()
    const principal = await principalOf(a.token)
    // The process dies after the reservation: the call is left to the sweeper, as after a crash.
    const call = await openMeteredCall(t.s, principal, { input: 1000, cachedInput: 1000, output: 1000 })
    call.leaveToSweeper()
    t.clock.advance(t.s.leases.leaseMs + 1)
    expect(await t.s.sweeper.sweepOnce()).toBe(1)
    const one = await t.req('GET', `/v1/activity/${call.callId}`, { token: a.token })
    expect(one.body).toMatchObject({ route: 'proxy:openai', model: 'm', reserved: call.price, outcome: 'abandoned' })
    const list = await t.req('GET', '/v1/activity', { token: a.token })
    expect(list.body.calls[0]).toMatchObject({ slug: 'proxy:openai', model: 'm', outcome: 'abandoned', refunded: true })
  })

  test("an abandoned metered call whose model and target hold a '|' is read from its string record whole, its hold released", async () => {
    const a = await t.signup()
    const principal = await principalOf(a.token)
    const model = 'gpt|odd|é'
    const call = await openModelCall(t.s, principal, model)
    expect(await t.s.ctx.redis.get(t.s.ctx.keys.call(a.account_id, call.callId))).toEndWith(`|${Buffer.byteLength(model)}|${model}|proxy:openai/${model}`)
    call.leaveToSweeper()
    t.clock.advance(t.s.leases.leaseMs + 1)
    expect(await t.s.sweeper.sweepOnce()).toBe(1)
    expect(await t.s.ctx.redis.hmget(t.s.ctx.keys.account(a.account_id), 'balance', 'held')).toEqual(['500', '0'])
    const one = await t.req('GET', `/v1/activity/${call.callId}`, { token: a.token })
    expect(one.body).toMatchObject({ route: 'proxy:openai', model, reserved: call.price, outcome: 'abandoned' })
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

  test('a cut-off call the sweeper cannot refund (its record damaged) holds no other call of its shard back', async () => {
    const a = await t.signup()
    const principal = await principalOf(a.token)
    const first = await debit(t.s.ctx, { principal, target: 'test.cheap', price: 1, unpriced: false, abandonAfterMs: 1000 })
    t.clock.advance(1)
    await debit(t.s.ctx, { principal, target: 'test.cheap', price: 1, unpriced: false, abandonAfterMs: 1000 })
    if (first.kind !== 'debited') throw new Error(first.kind)
    // A bad byte in the first one's record: refund.lua refuses it (the chain it names is not the agent's).
    // A flat call's record is a string, state|price|day|at|agent|chain|brk|target (lua/debit.lua).
    const record = t.s.ctx.keys.call(a.account_id, first.callId)
    const setChain = async (chain: string) => {
      const parts = (await t.redis.get(record))!.split('|')
      parts[5] = chain
      await t.redis.set(record, parts.join('|'), 'KEEPTTL')
    }
    await setChain('ag_gone')
    t.clock.advance(1001)
    const errors: unknown[] = []
    const sweeper = new AbandonedCallSweeper(t.s.ctx, (e) => errors.push(e))
    for (let i = 0; i < 3; i++) await sweeper.sweepOnce().catch((e) => errors.push(e))
    expect(await redisBalance(t, a.account_id)).toBe(499) // the second refunded, the damaged one left
    expect(errors.length).toBeGreaterThan(0)
    // Repaired, it is refunded on the next sweep.
    await setChain('')
    expect(await sweeper.sweepOnce()).toBe(1)
    expect(await redisBalance(t, a.account_id)).toBe(500)
    await checkRedisInvariant(t, a.account_id)
  })

  test('two sweepers racing: one refund, one activity record', async () => {
    const a = await t.signup()
    const principal = await principalOf(a.token)
    for (let i = 0; i < 5; i++) await debit(t.s.ctx, { principal, target: 'test.cheap', price: 1, unpriced: false, abandonAfterMs: 1000 })
    t.clock.advance(1001)
    const { AbandonedCallSweeper } = await import('../../src/paid-request/sweeper')
    const other = new AbandonedCallSweeper(t.s.ctx)
    const [x, y] = await Promise.all([t.s.sweeper.sweepOnce(), other.sweepOnce()])
    expect(x + y).toBe(5)
    expect(await redisBalance(t, a.account_id)).toBe(500)
    await checkRedisInvariant(t, a.account_id)
    const act = await t.req('GET', '/v1/activity', { token: a.token })
    expect(act.body.calls).toHaveLength(5)
  })

  test('a call that settles itself between the sweep’s read and its refund: the sweeper files nothing and leaves its key alone', async () => {
    const a = await t.signup()
    const principal = await principalOf(a.token)
    const { keys, redis } = t.s.ctx
    // The request's own filing (record-calls.lua, after its settle.lua) waits until the sweep is done.
    let openGate = () => {}
    const gate = new Promise<void>((r) => (openGate = r))
    const scripts = { ...t.s.ctx.scripts, recordCalls: async (...args: Parameters<typeof t.s.ctx.scripts.recordCalls>) => (await gate, t.s.ctx.scripts.recordCalls(...args)) }
    const call = await openMeteredCall({ ...t.s, ctx: { ...t.s.ctx, scripts } }, principal, { input: 1000, cachedInput: 1000, output: 1000 }, { idempotencyKey: 'late' })
    expect(await redisBalance(t, a.account_id)).toBe(497) // 3 reserved
    t.clock.advance(t.s.leases.leaseMs + 1) // its lease lapsed (a renewal that did not come), the request still runs
    // The request's settle.lua lands right after this sweep read the lapsed leases.
    let settling: ReturnType<typeof call.settle> | undefined
    const racing: RedisContext = {
      ...t.s.ctx,
      redis: new Proxy(redis, {
        get(target, prop) {
          if (prop !== 'zrangebyscore') return Reflect.get(target, prop, target)
          return async (...args: Parameters<typeof redis.zrangebyscore>) => {
            const due = await target.zrangebyscore(...args)
            if (!settling && due.includes(`${a.account_id}|${call.callId}`)) {
              settling = call.settle('ok', { usage: { tokens: { input: 500, cached: 0, output: 500 }, source: 'provider' }, replay: (bal, charged) => JSON.stringify({ bal, charged }) })
              while ((await target.hget(keys.call(a.account_id, call.callId), 'state')) === 'debited') await Bun.sleep(1)
            }
            return due
          }
        },
      }) as typeof redis,
    }
    expect(await new AbandonedCallSweeper(racing).sweepOnce()).toBe(0)
    openGate()
    expect(await settling!).toMatchObject({ outcome: 'ok', refunded: false, charged: 1 })
    expect(await redisBalance(t, a.account_id)).toBe(499)
    // The request's record is the one filed, and its key keeps its answer: a retry replays it.
    const act = await t.req('GET', '/v1/activity', { token: a.token })
    expect(act.body.calls).toHaveLength(1)
    expect(act.body.calls[0]).toMatchObject({ call_id: call.callId, outcome: 'ok', refunded: false, charged: 1 })
    expect(await redis.hgetall(keys.idempotency(a.account_id, null, 'late'))).toMatchObject({ state: 'done', response: JSON.stringify({ bal: 499, charged: 1 }) })
    await checkRedisInvariant(t, a.account_id)
  })
})
