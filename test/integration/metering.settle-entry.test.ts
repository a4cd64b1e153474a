/**
 * A metered call that settle-n files leaves ONE outbox entry after its debit: the call entry, with
 * the settle's refund folded into it (lua/settle-n.lua, `settle`). Read through the one parser it is
 * the refund entry and the call entry, field for field; flushed, it is the same Postgres rows as
 * when they were two entries. A target and a model holding '|' and non-ASCII characters come back
 * whole (the packed form gives the target's length in bytes). A folded entry whose call row Postgres
 * refuses is dead-lettered whole while its refund row commits once; put back once fixed, it adds the
 * call row and no second refund row. One whose packed refund does not unpack is dead-lettered alone.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { calls, ledgerEntries } from '../../src/db/schema'
import type { Principal } from '../../src/auth/principal'
import { openPaidCall } from '../../src/ledger/paid-call'
import { scanOutbox, type OutboxEntry } from '../../src/ledger/outbox'
import { startTestApp, type TestApp } from '../helpers/harness'
import { checkRedisInvariant, flushAll } from '../helpers/ledger'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

const ledgerRows = async (id: string) => (await t.s.db.db.select({ n: sql<number>`count(*)::int` }).from(ledgerEntries).where(eq(ledgerEntries.id, id)))[0]!.n
const callRows = async (callId: string) => (await t.s.db.db.select({ n: sql<number>`count(*)::int` }).from(calls).where(eq(calls.callId, callId)))[0]!.n

/** A metered call of `model` on proxy:openai (prices of gpt-test), opened in process, not yet settled. */
async function openMetered(principal: Principal, model = 'gpt-test') {
  const opened = await openPaidCall(t.s, {
    principal,
    target: `proxy:openai/${model}`,
    price: 0,
    unpriced: false,
    lease: true,
    metered: { model, inputBound: 1000, input: 150, cachedInput: 75, output: 600, ceiling: 1000, maxOutput: 1000, minOutput: 1 },
  })
  if (opened.kind !== 'debited') throw new Error('replay')
  return opened.call
}

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
  test(`settle-n's folded refund reads and flushes as its own entry did (model ${JSON.stringify(model)})`, async () => {
    const a = await t.signup()
    const principal = (await t.s.guard.tokens.resolve(a.token))!
    const { keys, redis } = t.s.ctx
    const stream = keys.outbox(keys.shardOf(a.account_id))
    const call = await openMetered(principal, model)
    const before = await redis.xlen(stream)
    const tokens = { input: 700, cached: 100, output: 333 }
    const settled = await call.settle('ok', { usage: { tokens, source: 'provider' } })
    // One stream entry for the settle and the filing together.
    expect((await redis.xlen(stream)) - before).toBe(1)

    const mine = (await entriesOf(a.account_id)).filter((e) => e.fields.call === call.callId || e.fields.id === `${call.callId}:call`)
    expect(mine.map((e) => e.kind)).toEqual(['debit', 'refund', 'call'])
    const [, refund, filed] = mine
    expect(refund!.streamId).toBe(filed!.streamId)
    const balance = Number(await redis.hget(keys.account(a.account_id), 'balance'))
    const rem = await redis.hget(keys.account(a.account_id), 'mc_rem')
    const cost = 700 * 150 + 100 * 75 + 333 * 600
    expect(settled.charged).toBe(Math.floor(cost / 1e6))
    expect(refund!.fields).toEqual({
      kind: 'refund',
      id: `${call.callId}:settle`,
      acct: a.account_id,
      agent: '',
      amount: String(call.price - settled.charged),
      bal: String(balance),
      call: call.callId,
      ref: `${call.callId}:debit`,
      target: `proxy:openai/${model}`,
      reason: 'metered_settle',
      at: refund!.fields.at!,
      model,
      tin: '700',
      tcached: '100',
      tout: '333',
      charged: String(settled.charged),
      uncharged_micro: '0',
      usage: 'provider',
      rem: rem!,
    })
    expect(Number(refund!.fields.at)).toBeGreaterThan(0)
    await checkRedisInvariant(t, a.account_id)

    await flushAll(t)
    const [row] = await t.s.db.db.select().from(ledgerEntries).where(eq(ledgerEntries.id, `${call.callId}:settle`))
    expect(row).toMatchObject({
      kind: 'refund',
      accountId: a.account_id,
      amount: call.price - settled.charged,
      balanceAfter: balance,
      callId: call.callId,
      refId: `${call.callId}:debit`,
      target: `proxy:openai/${model}`,
      model,
      tokensIn: 700,
      tokensCached: 100,
      tokensOut: 333,
      mcRem: Number(rem),
    })
    const [rec] = await t.s.db.db.select().from(calls).where(eq(calls.callId, call.callId))
    expect(rec).toMatchObject({ accountId: a.account_id, charged: settled.charged, model })
    expect(await redis.xlen(stream)).toBe(0)
  })
}

test('a folded entry whose call row Postgres refuses: the refund commits once, the entry is dead-lettered whole, and put back fixed it adds only the call', async () => {
  const a = await t.signup()
  const principal = (await t.s.guard.tokens.resolve(a.token))!
  const { keys, redis } = t.s.ctx
  const shard = keys.shardOf(a.account_id)
  const stream = keys.outbox(shard)
  const call = await openMetered(principal)
  await call.settle('ok', { usage: { tokens: { input: 5, cached: 0, output: 5 }, source: 'provider' } })
  // The folded entry, swapped for a copy whose record Postgres refuses (latency past an integer: 22003).
  const { sid, fields } = await rawCallEntry(stream, call.callId)
  expect(fields.kind).toBe('settled_call')
  const good = fields.rec!
  const bad = JSON.stringify({ ...JSON.parse(good), latency_ms: 99_999_999_999 })
  await redis.xdel(stream, sid)
  await redis.xadd(stream, '*', ...Object.entries({ ...fields, rec: bad }).flat())

  await flushAll(t)
  expect(await ledgerRows(`${call.callId}:settle`)).toBe(1)
  expect(await callRows(call.callId)).toBe(0)
  expect(await redis.xlen(stream)).toBe(0)
  const dead = await redis.xrange(keys.deadLetters(shard), '-', '+')
  const mine = dead.filter(([, f]) => f.includes(`${call.callId}:call`))
  expect(mine.length).toBe(1)
  const kept = mine[0]![1]
  expect(kept[kept.indexOf('f:kind') + 1]).toBe('settled_call')
  expect(kept[kept.indexOf('f:settle') + 1]).toBe(fields.settle)

  // Fixed and put back (as a replay after the cause is mended): the call row, and still one refund row.
  await redis.xadd(stream, '*', ...Object.entries(fields).flat())
  await flushAll(t)
  expect(await ledgerRows(`${call.callId}:settle`)).toBe(1)
  expect(await callRows(call.callId)).toBe(1)
  await redis.xdel(keys.deadLetters(shard), mine[0]![0])
})

test('a settled_call whose packed refund does not unpack is dead-lettered alone: no refund read wrong, the other entries commit', async () => {
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
  expect(await ledgerRows(`${bad}:settle`)).toBe(0)
  expect(await callRows(bad)).toBe(0)
  expect(await ledgerRows(`${bad}:debit`)).toBe(1)
  expect(await ledgerRows(`${good}:settle`)).toBe(1)
  expect(await callRows(good)).toBe(1)
  expect(await redis.xlen(stream)).toBe(0)
  const dead = (await redis.xrange(keys.deadLetters(shard), '-', '+')).filter(([, f]) => f.includes(`${bad}:call`))
  expect(dead.length).toBe(1)
  expect(dead[0]![1][dead[0]![1].indexOf('f:settle') + 1]).toBe(cut)
  await redis.xdel(keys.deadLetters(shard), dead[0]![0])
})
