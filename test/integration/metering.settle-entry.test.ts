/**
 * A metered call's reservation is a hold, not a ledger entry (docs/metering.md): the call that
 * settle.lua files leaves ONE outbox entry, the call entry with the call's one debit — of its exact
 * charge — folded into it (lua/settle.lua, `settle`). Read through the one parser it is the debit
 * entry and the call entry, field for field; flushed, it is the same Postgres rows as when they
 * were two entries. A target and a model holding '|' and non-ASCII characters come back whole (the
 * packed form gives the target's length in bytes). A folded entry whose call row Postgres refuses
 * is dead-lettered whole while its debit row commits once; put back once fixed, it adds the call
 * row and no second debit row. One whose packed debit does not unpack is dead-lettered alone. A
 * refunded metered call leaves no ledger entry; one debited before the hold (its reservation in the
 * ledger, a rolling deploy) is settled as then, with a refund of the release.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { calls, ledgerEntries } from '../../src/db/schema'
import type { Principal } from '../../src/auth/principal'
import { openPaidCall } from '../../src/paid-request'
import { creditCharge, reserveRefill } from '../../src/ledger/topup'
import { applyReferralBonus } from '../../src/ledger/accounts'
import { REFERRAL_CREDITS } from '../../src/ledger/constants'
import { ScriptStatus } from '../../src/redis/codes'
import { scanOutbox, type OutboxEntry } from '../../src/write-behind/outbox'
import { startTestApp, type TestApp } from '../helpers/harness'
import { openModelCall } from '../helpers/metering'
import { assertLedger } from '../helpers/invariants'
import { asHashRecord, checkRedisInvariant, flushAll } from '../helpers/ledger'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

const ledgerRows = async (id: string) => (await t.s.db.db.select({ n: sql<number>`count(*)::int` }).from(ledgerEntries).where(eq(ledgerEntries.id, id)))[0]!.n
const callRows = async (callId: string) => (await t.s.db.db.select({ n: sql<number>`count(*)::int` }).from(calls).where(eq(calls.callId, callId)))[0]!.n

const openMetered = (principal: Principal, model?: string) => openModelCall(t.s, principal, model)

/** The fields of the stream entry holding `callId`'s call entry, and its stream id. */
async function rawCallEntry(stream: string, callId: string) {
  const [sid, raw] = (await t.s.ctx.redis.xrange(stream, '-', '+')).find(([, f]) => f.includes(`${callId}:call`))!
  return { sid, fields: Object.fromEntries(Array.from({ length: raw.length / 2 }, (_, i) => [raw[2 * i]!, raw[2 * i + 1]!])) }
}

async function entriesOf(acct: string): Promise<OutboxEntry[]> {
  const out: OutboxEntry[] = []
  for await (const e of scanOutbox(t.s.ctx, t.s.ctx.keys.shardOf(acct))) if (e.fields.acct === acct || e.fields.id?.endsWith(':call')) out.push(e)
  return out
}

for (const model of ['gpt-test', 'm|ödd|é', '|']) {
  test(`settle.lua's folded debit reads and flushes as its own entry did (model ${JSON.stringify(model)})`, async () => {
    const a = await t.signup()
    const principal = (await t.s.guard.tokens.resolve(a.token))!
    const { keys, redis } = t.s.ctx
    const stream = keys.outbox(keys.shardOf(a.account_id))
    const before = await redis.xlen(stream)
    const call = await openMetered(principal, model)
    // The reservation: off the balance, onto `held`, and no entry.
    expect(await redis.xlen(stream)).toBe(before)
    expect(await redis.hmget(keys.account(a.account_id), 'balance', 'held')).toEqual([String(500 - call.price), String(call.price)])
    await checkRedisInvariant(t, a.account_id)
    const tokens = { input: 7000, cached: 1000, output: 3330 }
    const settled = await call.settle('ok', { usage: { tokens, source: 'provider' } })
    // One stream entry for the settle and the filing together.
    expect((await redis.xlen(stream)) - before).toBe(1)

    const mine = (await entriesOf(a.account_id)).filter((e) => e.fields.call === call.callId || e.fields.id === `${call.callId}:call`)
    expect(mine.map((e) => e.kind)).toEqual(['debit', 'call'])
    const [debit, filed] = mine
    expect(debit!.streamId).toBe(filed!.streamId)
    const balance = Number(await redis.hget(keys.account(a.account_id), 'balance'))
    expect(await redis.hget(keys.account(a.account_id), 'held')).toBe('0')
    const rem = await redis.hget(keys.account(a.account_id), 'mc_rem')
    const cost = 7000 * 150 + 1000 * 75 + 3330 * 600
    expect(settled.charged).toBe(Math.floor(cost / 1e6))
    expect(settled.charged).toBeGreaterThan(0)
    expect(balance).toBe(500 - settled.charged)
    expect(debit!.fields).toEqual({
      kind: 'debit',
      id: `${call.callId}:debit`,
      acct: a.account_id,
      agent: '',
      amount: String(-settled.charged),
      bal: String(balance),
      call: call.callId,
      target: `proxy:openai/${model}`,
      at: debit!.fields.at!,
      model,
      tin: '7000',
      tcached: '1000',
      tout: '3330',
      charged: String(settled.charged),
      uncharged_micro: '0',
      usage: 'provider',
      rem: rem!,
    })
    expect(Number(debit!.fields.at)).toBeGreaterThan(0)
    await checkRedisInvariant(t, a.account_id)

    await flushAll(t)
    const [row] = await t.s.db.db.select().from(ledgerEntries).where(eq(ledgerEntries.id, `${call.callId}:debit`))
    expect(row).toMatchObject({
      kind: 'debit',
      accountId: a.account_id,
      amount: -settled.charged,
      balanceAfter: balance,
      callId: call.callId,
      refId: null,
      target: `proxy:openai/${model}`,
      model,
      tokensIn: 7000,
      tokensCached: 1000,
      tokensOut: 3330,
      mcRem: Number(rem),
    })
    expect(await ledgerRows(`${call.callId}:settle`)).toBe(0)
    const [rec] = await t.s.db.db.select().from(calls).where(eq(calls.callId, call.callId))
    expect(rec).toMatchObject({ accountId: a.account_id, charged: settled.charged, model })
    expect(await redis.xlen(stream)).toBe(0)
  })
}

test('entries written while a call holds credits carry the posted balance, and a refunded metered call leaves no entry', async () => {
  const a = await t.signup()
  const principal = (await t.s.guard.tokens.resolve(a.token))!
  const { keys, redis } = t.s.ctx
  const held = await openMetered(principal)
  const refunded = await openMetered(principal)
  // A flat call while two holds are open: its entry's balance is the posted one.
  const flat = await openPaidCall(t.s, { principal, target: 'proxy:anthropic', price: 2, unpriced: false, lease: true })
  if (flat.kind !== 'debited') throw new Error('replay')
  const [flatEntry] = (await entriesOf(a.account_id)).filter((e) => e.fields.id === `${flat.call.callId}:debit`)
  expect(flatEntry!.fields.bal).toBe(String(500 - 2))
  expect(Number(await redis.hget(keys.account(a.account_id), 'balance'))).toBe(500 - 2 - 2 * held.price)
  // What the owner reads: the spendable balance, and the holds that make up the posted one.
  expect((await t.req('GET', '/v1/balance', { token: a.token })).body).toMatchObject({ balance: 500 - 2 - 2 * held.price, held: 2 * held.price })
  // A top-up (credit-topup.lua) likewise.
  const chargeId = `ch_${a.account_id}`
  expect(await creditCharge(t.s.ctx, { accountId: a.account_id, chargeId, credits: 100, kind: 'pack', gateway: 'sandbox' })).toMatchObject({ kind: 'credited' })
  const [topupEntry] = (await entriesOf(a.account_id)).filter((e) => e.fields.id === `${chargeId}:topup`)
  expect(topupEntry!.fields.bal).toBe(String(500 - 2 + 100))
  await checkRedisInvariant(t, a.account_id)
  // The provider fails: the hold is released, and there is nothing in the ledger to correct.
  const r = await refunded.settle('provider_error')
  expect(r.refunded).toBe(true)
  expect(await redis.hget(keys.account(a.account_id), 'held')).toBe(String(held.price))
  const kept = await held.settle('ok', { usage: { tokens: { input: 7000, cached: 0, output: 3000 }, source: 'provider' } })
  expect(kept.charged).toBe(2)
  await flat.call.settle('ok')
  await checkRedisInvariant(t, a.account_id)
  await flushAll(t)
  expect(await ledgerRows(`${refunded.callId}:debit`)).toBe(0)
  expect(await ledgerRows(`${refunded.callId}:refund`)).toBe(0)
  expect(await redis.hmget(keys.account(a.account_id), 'balance', 'held')).toEqual(['596', '0'])
  expect((await t.req('GET', '/v1/balance', { token: a.token })).body).toMatchObject({ balance: 596, held: 0 })
  await assertLedger(t.s, [{ account: a.account_id, balance: 596 }], { debits: [held.callId, flat.call.callId] })
})

test('a call debited before the hold (its reservation in the ledger) settles as then: a refund of the release', async () => {
  const a = await t.signup()
  const principal = (await t.s.guard.tokens.resolve(a.token))!
  const { keys, redis } = t.s.ctx
  const call = await openMetered(principal)
  // As debit.lua left a metered call before the hold: no `hold` mark, nothing held, the reservation
  // a debit entry of its own.
  await asHashRecord(redis, keys.call(a.account_id, call.callId), ['hold'])
  await redis.hincrby(keys.account(a.account_id), 'held', -call.price)
  await redis.xadd(keys.outbox(keys.shardOf(a.account_id)), '*', 'kind', 'debit', 'id', `${call.callId}:debit`, 'acct', a.account_id,
    'agent', '', 'amount', String(-call.price), 'bal', String(500 - call.price), 'call', call.callId, 'target', 'proxy:openai/gpt-test', 'at', String(Date.now()), 'model', 'gpt-test')
  await checkRedisInvariant(t, a.account_id)
  const settled = await call.settle('ok', { usage: { tokens: { input: 700, cached: 100, output: 333 }, source: 'provider' } })
  const mine = (await entriesOf(a.account_id)).filter((e) => e.fields.call === call.callId || e.fields.id === `${call.callId}:call`)
  expect(mine.map((e) => e.kind)).toEqual(['debit', 'refund', 'call'])
  expect(mine[1]!.fields).toMatchObject({ id: `${call.callId}:settle`, amount: String(call.price - settled.charged), ref: `${call.callId}:debit`, reason: 'metered_settle' })
  expect(await redis.hget(keys.account(a.account_id), 'held')).toBe('0')
  await checkRedisInvariant(t, a.account_id)
  await flushAll(t)
  await assertLedger(t.s, [{ account: a.account_id, balance: 500 - settled.charged }], { refunded: [call.callId] })
})

test('a folded entry whose call row Postgres refuses: the debit commits once, the entry is dead-lettered whole, and put back fixed it adds only the call', async () => {
  const a = await t.signup()
  const principal = (await t.s.guard.tokens.resolve(a.token))!
  const { keys, redis } = t.s.ctx
  const shard = keys.shardOf(a.account_id)
  const stream = keys.outbox(shard)
  const call = await openMetered(principal)
  await call.settle('ok', { usage: { tokens: { input: 5, cached: 0, output: 5 }, source: 'provider' } })
  // The folded entry, swapped for a copy whose record Postgres refuses (latency past an integer: 22003).
  const { sid, fields } = await rawCallEntry(stream, call.callId)
  expect(fields.kind).toBe('charged_call')
  const good = fields.rec!
  const bad = JSON.stringify({ ...JSON.parse(good), latency_ms: 99_999_999_999 })
  await redis.xdel(stream, sid)
  await redis.xadd(stream, '*', ...Object.entries({ ...fields, rec: bad }).flat())

  await flushAll(t)
  expect(await ledgerRows(`${call.callId}:debit`)).toBe(1)
  expect(await callRows(call.callId)).toBe(0)
  expect(await redis.xlen(stream)).toBe(0)
  const dead = await redis.xrange(keys.deadLetters(shard), '-', '+')
  const mine = dead.filter(([, f]) => f.includes(`${call.callId}:call`))
  expect(mine.length).toBe(1)
  const kept = mine[0]![1]
  expect(kept[kept.indexOf('f:kind') + 1]).toBe('charged_call')
  expect(kept[kept.indexOf('f:settle') + 1]).toBe(fields.settle)

  // Fixed and put back (as a replay after the cause is mended): the call row, and still one debit row.
  await redis.xadd(stream, '*', ...Object.entries(fields).flat())
  await flushAll(t)
  expect(await ledgerRows(`${call.callId}:debit`)).toBe(1)
  expect(await callRows(call.callId)).toBe(1)
  await redis.xdel(keys.deadLetters(shard), mine[0]![0])
})

test('a charged_call whose packed debit does not unpack is dead-lettered alone: no debit read wrong, the other entries commit', async () => {
  const a = await t.signup()
  const principal = (await t.s.guard.tokens.resolve(a.token))!
  const { keys, redis } = t.s.ctx
  const shard = keys.shardOf(a.account_id)
  const stream = keys.outbox(shard)
  const open = async () => {
    const call = await openMetered(principal)
    await call.settle('ok', { usage: { tokens: { input: 5, cached: 0, output: 5 }, source: 'provider' } })
    return call.callId
  }
  const bad = await open()
  const good = await open()
  // The first call's folded entry, its `settle` cut short (the model and the target's end gone).
  const { sid, fields } = await rawCallEntry(stream, bad)
  const cut = fields.settle!.slice(0, fields.settle!.lastIndexOf('|') - 3)
  await redis.xdel(stream, sid)
  await redis.xadd(stream, '*', ...Object.entries({ ...fields, settle: cut }).flat())

  await flushAll(t)
  expect(await ledgerRows(`${bad}:debit`)).toBe(0)
  expect(await callRows(bad)).toBe(0)
  expect(await ledgerRows(`${good}:debit`)).toBe(1)
  expect(await callRows(good)).toBe(1)
  expect(await redis.xlen(stream)).toBe(0)
  const dead = (await redis.xrange(keys.deadLetters(shard), '-', '+')).filter(([, f]) => f.includes(`${bad}:call`))
  expect(dead.length).toBe(1)
  expect(dead[0]![1][dead[0]![1].indexOf('f:settle') + 1]).toBe(cut)
  await redis.xdel(keys.deadLetters(shard), dead[0]![0])
})

test('the balance cap weighs what calls in flight hold: a credit that fits beside the holds only is parked, and no settle takes the balance past the cap', async () => {
  const a = await t.signup()
  const principal = (await t.s.guard.tokens.resolve(a.token))!
  const { keys, redis } = t.s.ctx
  const call = await openMetered(principal)
  const held = call.price
  expect(held).toBeGreaterThan(2)
  // The cap just above the posted balance (500): the spendable balance is 500 − held.
  const cap = 503
  await redis.hset(keys.account(a.account_id), 'balance_cap', cap)
  // Fits beside the spendable balance (500 − held + 8 ≤ 503), not beside the posted one.
  const parked = await creditCharge(t.s.ctx, { accountId: a.account_id, chargeId: `ch_${a.account_id}_1`, credits: 8, kind: 'pack', gateway: 'sandbox' })
  expect(parked).toMatchObject({ kind: 'parked', balance: 500, balanceCap: cap })
  // An agent's explicit top-up through the mandate (reserve-refill.lua) weighs it the same way.
  await redis.hset(keys.mandate(a.account_id), { enabled: '1', threshold: '100', refill: '8', ceiling: '100000', customer: 'cus_cap', pm: 'pm_cap', gateway: 'sandbox' })
  expect(await reserveRefill(t.s.ctx, a.account_id, 'topup', 8, 'sandbox')).toMatchObject({ kind: 'refused', status: ScriptStatus.BALANCE_CAP, a: 500, b: cap })
  const fits = await creditCharge(t.s.ctx, { accountId: a.account_id, chargeId: `ch_${a.account_id}_2`, credits: 3, kind: 'pack', gateway: 'sandbox' })
  expect(fits).toMatchObject({ kind: 'credited' })
  // The call spends almost nothing: its release comes back, and the balance stays within the cap.
  await call.settle('ok', { usage: { tokens: { input: 10, cached: 0, output: 1 }, source: 'provider' } })
  const [balance, stillHeld] = (await redis.hmget(keys.account(a.account_id), 'balance', 'held')).map(Number)
  expect(stillHeld).toBe(0)
  expect(balance).toBeLessThanOrEqual(cap)
  await checkRedisInvariant(t, a.account_id)
})

test('a referral bonus weighs the referrer\'s holds too: it credits only the room beside the posted balance', async () => {
  const referrer = await t.signup()
  const referred = await t.signup(undefined, { referred_by: referrer.public_ref })
  const principal = (await t.s.guard.tokens.resolve(referrer.token))!
  const { keys, redis } = t.s.ctx
  const call = await openMetered(principal)
  expect(call.price).toBeGreaterThan(0)
  // One credit short of room for the whole bonus beside the posted balance (500).
  const cap = 500 + REFERRAL_CREDITS - 1
  await redis.hset(keys.account(referrer.account_id), 'balance_cap', cap)
  await applyReferralBonus(t.s.ctx, referred.account_id, referrer.account_id, `call_ref_${referrer.account_id}`)
  const [balance, held] = (await redis.hmget(keys.account(referrer.account_id), 'balance', 'held')).map(Number)
  expect(balance! + held!).toBe(cap)
  await call.settle('ok', { usage: { tokens: { input: 10, cached: 0, output: 1 }, source: 'provider' } })
  expect(Number(await redis.hget(keys.account(referrer.account_id), 'balance'))).toBeLessThanOrEqual(cap)
  await checkRedisInvariant(t, referrer.account_id)
})
