/**
 * Property (docs/api.md §5, §7): a metered call settled without an Idempotency-Key is filed by settle.lua
 * itself; one with a key is settled, then filed by record-calls.lua. Over random prices and usage (past
 * the reservation too) both file the same record, the same `call` outbox entry and the same public
 * counters, and the same debit entry of the charge (folded into the call entry by settle.lua, an entry of its own
 * on the keyed path); the call record is marked filed with the short TTL (settle.lua's the bare word `filed`,
 * record-calls.lua's hash `recorded` and `state` filed) and leaves the in-flight set; a resent filing changes nothing.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import fc from 'fast-check'
import { recordCall } from '../../src/paid-request/calls'
import { SETTLED_CALL_TTL_S } from '../../src/ledger/constants'
import { scanOutbox, type OutboxEntry } from '../../src/write-behind/outbox'
import type { Principal } from '../../src/auth/principal'
import { startTestApp, type TestApp } from '../helpers/harness'
import { openMeteredCall, tokenPrices } from '../helpers/metering'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

const price = tokenPrices(200_000)
// Up to 3× the bounds below: some calls use more than was reserved (charged the reservation, the rest uncharged).
const usage = fc.record({ input: fc.nat(3000), cached: fc.nat(1000), output: fc.nat(3000) })

type Filed = { rec: Record<string, unknown>; entry: Record<string, string>; debit: Record<string, string> }

async function meteredCall(principal: Principal, p: { input: number; cachedInput: number; output: number }, u: { input: number; cached: number; output: number }, key?: string) {
  const call = await openMeteredCall(t.s, principal, p, { idempotencyKey: key })
  const s = await call.settle('ok', { usage: { tokens: u, source: 'provider' } })
  return { callId: call.callId, charged: s.charged }
}

async function filedOf(acct: string, callId: string): Promise<Filed> {
  const { ctx } = t.s
  const { keys } = ctx
  // The keyless filing is not awaited by record-calls.lua's path; settle.lua's is, but wait for both alike.
  let list: string[] = []
  for (let i = 0; i < 50 && !list.some((r) => r.includes(callId)); i++) {
    list = await ctx.redis.lrange(keys.recentCalls(acct), 0, -1)
    if (!list.some((r) => r.includes(callId))) await Bun.sleep(10)
  }
  const raw = list.filter((r) => r.includes(callId))
  expect(raw.length).toBe(1)
  // Through the one parser: settle.lua folds the call's debit into the call entry, the keyed path writes two.
  const all: OutboxEntry[] = []
  for await (const e of scanOutbox(ctx, keys.shardOf(acct))) all.push(e)
  const entries = all.filter((e) => e.kind === 'call' && e.fields.id === `${callId}:call`).map((e) => e.fields)
  const debits = all.filter((e) => e.kind === 'debit' && e.fields.id === `${callId}:debit`).map((e) => e.fields)
  expect(debits.length).toBe(1)
  expect(entries.length).toBe(1)
  // settle.lua leaves the bare word (lua/settle.lua), record-calls.lua marks the keyed call's hash.
  const key = keys.call(acct, callId)
  const h = (await ctx.redis.type(key)) === 'string' ? await ctx.redis.get(key) : (await ctx.redis.hmget(key, 'recorded', 'state')).join('|')
  expect(['filed', '1|filed']).toContain(h!)
  const ttl = await ctx.redis.ttl(keys.call(acct, callId))
  expect(ttl).toBeGreaterThan(0)
  expect(ttl).toBeLessThanOrEqual(SETTLED_CALL_TTL_S)
  expect(await ctx.redis.zscore(keys.inflight(keys.shardOf(acct)), `${acct}|${callId}`)).toBeNull()
  const { call_id: _c, latency_ms: _l, at: _a, ...rec } = JSON.parse(raw[0]!) as Record<string, unknown>
  const { id: _i, rec: r, settle: _s, ...entry } = entries[0]!
  expect(JSON.parse(r!)).toEqual(JSON.parse(raw[0]!))
  const { id: _r, call: _k, acct: _a2, at: _t, ...debit } = debits[0]!
  expect(debits[0]).toMatchObject({ call: callId, acct })
  return { rec, entry, debit }
}

async function stats(acct: string) {
  const keys = t.s.ctx.keys
  const [n, c] = await t.s.ctx.redis.hmget(keys.stats(keys.shardOf(acct)), 'organic_calls_routed', 'credits_honored')
  return { n: Number(n ?? 0), c: Number(c ?? 0) }
}

test('settle.lua files a keyless metered call exactly as record-calls.lua files a keyed one', async () => {
  await fc.assert(
    fc.asyncProperty(price, usage, async (p, u) => {
      const a = await t.signup()
      const b = await t.signup()
      const pa = (await t.s.guard.tokens.resolve(a.token))!
      const pb = (await t.s.guard.tokens.resolve(b.token))!
      const before = await stats(a.account_id)
      const x = await meteredCall(pa, p, u)
      const mid = await stats(a.account_id)
      const y = await meteredCall(pb, p, u, 'k1')
      expect(x.charged).toBe(y.charged)
      const fx = await filedOf(a.account_id, x.callId)
      const fy = await filedOf(b.account_id, y.callId)
      expect({ ...fx.rec, account_id: null }).toEqual({ ...fy.rec, account_id: null })
      expect(fx.rec.charged).toBe(x.charged)
      expect(fx.entry).toEqual({ kind: 'call', organic: '1', charged: String(x.charged) })
      expect(fy.entry).toEqual(fx.entry)
      // The debit settle.lua folded into the call entry reads as the one it writes on its own.
      expect(fy.debit).toEqual(fx.debit)
      expect(fx.debit).toMatchObject({ kind: 'debit', amount: x.charged ? String(-x.charged) : '0', charged: String(x.charged) })
      // Both accounts may share a shard: only the keyless call's own step is read here.
      expect(mid.n - before.n).toBe(1)
      expect(mid.c - before.c).toBe(x.charged)
    }),
    { numRuns: 30 },
  )
})

test('a filing sent again after settle.lua filed the call changes nothing', async () => {
  const a = await t.signup()
  const principal = (await t.s.guard.tokens.resolve(a.token))!
  const x = await meteredCall(principal, { input: 1000, cachedInput: 0, output: 1000 }, { input: 10, cached: 0, output: 10 })
  const first = await filedOf(a.account_id, x.callId)
  const s0 = await stats(a.account_id)
  await recordCall(t.s.ctx, a.account_id, { call_id: x.callId, slug: 'proxy:openai', agent_id: null, charged: 99, refunded: false, outcome: 'ok', http_status: 200, latency_ms: 1, at: new Date().toISOString() })
  expect(await filedOf(a.account_id, x.callId)).toEqual(first)
  expect(await stats(a.account_id)).toEqual(s0)
})
