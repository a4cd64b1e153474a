/**
 * A proxied stream runs as long as the provider streams: its in-flight deadline is a lease the
 * serving process renews, so the abandoned-call sweeper never refunds a live stream, however long,
 * and still refunds one whose process stopped renewing (a crash) once the lease lapses.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Server } from 'bun'
import { debit } from '../../src/paid-request/debit'
import { refund } from '../../src/paid-request/refund'
import { startTestApp, type TestApp } from '../helpers/harness'
import { checkRedisInvariant, redisBalance } from '../helpers/ledger'

const PRICE = 3
let t: TestApp
let base: string
let upstream: Server<unknown>
/** Ends the stream the fake provider is holding open. */
let finishStream: () => void = () => {}

beforeAll(async () => {
  // A provider whose SSE stream stays open until the test lets it finish.
  upstream = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch() {
      const enc = new TextEncoder()
      const body = new ReadableStream<Uint8Array>({
        async start(c) {
          c.enqueue(enc.encode('data: {"part":1}\n\n'))
          await new Promise<void>((resolve) => (finishStream = resolve))
          c.enqueue(enc.encode('data: [DONE]\n\n'))
          c.close()
        },
      })
      return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
    },
  })
  t = await startTestApp({
    catalog: () => ({
      providers: {
        llm: { base_url: `http://127.0.0.1:${upstream.port}`, key_env: 'FAKE_HOUSE_KEY', auth: { header: 'authorization', scheme: 'Bearer' }, proxy: { price: PRICE, paths: ['/v1/'], house: { allow: ['/v1/'] } } },
      },
      capabilities: [],
    }),
  })
  base = await t.listen()
})
afterAll(async () => {
  await t.close()
  upstream.stop(true)
})

async function inFlight(accountId: string): Promise<Record<string, number>> {
  const shard = t.s.ctx.keys.shardOf(accountId)
  const flat = await t.s.ctx.redis.zrange(t.s.ctx.keys.inflight(shard), 0, -1, 'WITHSCORES')
  const out: Record<string, number> = {}
  for (let i = 0; i < flat.length; i += 2) if (flat[i]!.startsWith(accountId)) out[flat[i]!] = Number(flat[i + 1])
  return out
}

describe('in-flight leases of proxied streams', () => {
  test('a stream that outlives many leases is never refunded by the sweeper, and is charged once', async () => {
    const a = await t.signup()
    const res = await fetch(`${base}/proxy/llm/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ stream: true }),
    })
    expect(res.status).toBe(200)
    const reader = res.body!.getReader()
    const first = new TextDecoder().decode((await reader.read()).value)
    expect(first).toContain('"part":1')
    expect(t.s.leases.size).toBe(1)

    // Three hours of streaming, renewed every few minutes: each sweep finds nothing due.
    for (let minutes = 0; minutes < 180; minutes += 3) {
      t.clock.advance(3 * 60_000)
      expect(await t.s.leases.renewOnce()).toBe(1)
      expect(await t.s.sweeper.sweepOnce()).toBe(0)
    }
    const deadlines = Object.values(await inFlight(a.account_id))
    expect(deadlines).toEqual([t.clock.now() + t.s.leases.leaseMs])
    expect(await redisBalance(t, a.account_id)).toBe(500 - PRICE)

    finishStream()
    let rest = ''
    for (;;) {
      const r = await reader.read()
      if (r.done) break
      rest += new TextDecoder().decode(r.value)
    }
    expect(rest).toContain('[DONE]')
    // Settled: the lease is released and the call has left the in-flight set.
    for (let i = 0; i < 50 && (t.s.leases.size > 0 || Object.keys(await inFlight(a.account_id)).length > 0); i++) await Bun.sleep(10)
    expect(t.s.leases.size).toBe(0)
    expect(await inFlight(a.account_id)).toEqual({})
    t.clock.advance(24 * 3600_000)
    expect(await t.s.sweeper.sweepOnce()).toBe(0)
    expect(await redisBalance(t, a.account_id)).toBe(500 - PRICE)
    const entries = await checkRedisInvariant(t, a.account_id)
    expect(entries.map((e) => e.kind)).toEqual(['grant', 'debit'])
  })

  test('a stream whose process stopped renewing (a crash) is refunded once its lease lapses', async () => {
    const a = await t.signup()
    const principal = (await t.s.guard.tokens.resolve(a.token))!
    // The proxy's debit and lease, then the "crash": the lease is never renewed again.
    const d = await debit(t.s.ctx, { principal, target: 'proxy:llm', price: PRICE, unpriced: false, abandonAfterMs: t.s.leases.leaseMs })
    if (d.kind !== 'debited') throw new Error(`debit: ${d.kind}`)
    t.clock.advance(t.s.leases.leaseMs - 1)
    expect(await t.s.sweeper.sweepOnce()).toBe(0)
    t.clock.advance(2)
    expect(await t.s.sweeper.sweepOnce()).toBe(1)
    expect(await redisBalance(t, a.account_id)).toBe(500)
    const act = await t.req('GET', '/v1/activity', { token: a.token })
    expect(act.body.calls[0]).toMatchObject({ call_id: d.callId, outcome: 'abandoned', refunded: true })
  })

  test('a renewal that lands between the sweep reading the set and its refund wins: nothing is refunded', async () => {
    const a = await t.signup()
    const principal = (await t.s.guard.tokens.resolve(a.token))!
    const d = await debit(t.s.ctx, { principal, target: 'proxy:llm', price: PRICE, unpriced: false, abandonAfterMs: 1000 })
    if (d.kind !== 'debited') throw new Error(`debit: ${d.kind}`)
    t.clock.advance(1001)
    const sweptAt = t.clock.now() // the sweep read the call as due at this instant...
    const release = t.s.leases.hold(a.account_id, d.callId)
    expect(await t.s.leases.renewOnce()).toBe(1) // ...then the serving process renewed it
    const r = await refund(t.s.ctx, { accountId: a.account_id, agentId: null, callId: d.callId, day: d.day, reason: 'abandoned', dueBy: sweptAt })
    expect(r).toMatchObject({ applied: false, notDue: true })
    expect(await redisBalance(t, a.account_id)).toBe(500 - PRICE)
    release()
  })

  test('a renewal never brings back a call that was settled meanwhile', async () => {
    const a = await t.signup()
    const principal = (await t.s.guard.tokens.resolve(a.token))!
    const d = await debit(t.s.ctx, { principal, target: 'proxy:llm', price: PRICE, unpriced: false, abandonAfterMs: 60_000 })
    if (d.kind !== 'debited') throw new Error(`debit: ${d.kind}`)
    const release = t.s.leases.hold(a.account_id, d.callId)
    await refund(t.s.ctx, { accountId: a.account_id, agentId: null, callId: d.callId, day: d.day, reason: 'provider_error' })
    expect(await t.s.leases.renewOnce()).toBe(0)
    expect(await inFlight(a.account_id)).toEqual({})
    release()
  })
})
