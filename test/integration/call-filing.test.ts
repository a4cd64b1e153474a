/**
 * Settled calls are filed in batches (record-calls.lua, src/paid-request/call-filing.ts): the calls a shard
 * settles in one turn of the event loop share one script. Through HTTP, concurrent calls of several
 * accounts (charged, refunded, with and without an Idempotency-Key) are each filed exactly once —
 * in activity, in the public counters and in Postgres — and fewer scripts run than calls end.
 *
 *   bun test test/integration/call-filing.test.ts
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { inArray } from 'drizzle-orm'
import { calls } from '../../src/db/schema'
import { CallFiling, filingGroup } from '../../src/paid-request/call-filing'
import { parseOutboxEntry } from '../../src/write-behind/outbox'
import { startTestApp, type TestApp } from '../helpers/harness'
import { assertLedger, drain } from '../helpers/invariants'
import { countScript } from '../helpers/script-count'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t?.close()
})

/** Counts the record-calls.lua scripts sent and the calls they carried (ARGV[4..3 + G], its groups' sizes). */
const countFiling = () => countScript(t, 'recordCalls', (_, argv) => argv.slice(3, 3 + Number(argv[2])).reduce<number>((n, m) => n + Number(m), 0))

test('concurrent calls of several accounts are each filed once, in fewer scripts than calls', async () => {
  const accounts = await Promise.all([t.signup(), t.signup(), t.signup()])
  const before = (await t.req('GET', '/v1/public-stats')).body
  const seen = countFiling()
  const sends = accounts.flatMap((a, i) => [
    ...Array.from({ length: 12 }, () => t.req('POST', '/v1/call/test.echo', { token: a.token, body: { i } })),
    ...Array.from({ length: 3 }, () => t.req('POST', '/v1/call/test.fail', { token: a.token, body: {} })),
    ...Array.from({ length: 2 }, (_, k) =>
      t.req('POST', '/v1/call/test.echo', { token: a.token, body: { k }, headers: { 'idempotency-key': `filing-${t.prefix}-${i}-${k}` } }),
    ),
  ])
  const rs = await Promise.all(sends)
  await Bun.sleep(50)
  seen.restore()
  const ok = rs.filter((r) => r.status === 200)
  expect(ok).toHaveLength(3 * 14)
  expect(rs.filter((r) => r.status !== 200).every((r) => r.body.error === 'PROVIDER_ERROR' && r.body.refunded === true)).toBe(true)

  expect(seen.calls).toBe(rs.length)
  expect(seen.scripts).toBeLessThan(seen.calls)

  const after = (await t.req('GET', '/v1/public-stats')).body
  expect(after.organic_calls_routed - before.organic_calls_routed).toBe(3 * 14)
  for (const a of accounts) {
    const activity = (await t.req('GET', '/v1/activity', { token: a.token })).body.calls as { call_id: string; refunded: boolean }[]
    expect(activity).toHaveLength(17)
    expect(new Set(activity.map((c) => c.call_id)).size).toBe(17)
    expect(activity.filter((c) => c.refunded)).toHaveLength(3)
  }
  const ids = rs.map((r) => r.body.call_id as string)
  await drain(t.s.flusher)
  const rows = await t.s.db.db.select({ id: calls.callId }).from(calls).where(inArray(calls.callId, ids))
  expect(rows).toHaveLength(ids.length)
  await assertLedger(t.s, accounts.map((a) => ({ account: a.account_id })), { debits: ok.map((r) => r.body.call_id) })
})

test('a key stored in a batch replays its answer, charged once', async () => {
  const a = await t.signup()
  const headers = { 'idempotency-key': `filing-replay-${t.prefix}` }
  const [first, ...others] = await Promise.all([
    t.req('POST', '/v1/call/test.echo', { token: a.token, body: { x: 1 }, headers }),
    ...Array.from({ length: 5 }, () => t.req('POST', '/v1/call/test.echo', { token: a.token, body: { x: 2 } })),
  ])
  expect(first.status).toBe(200)
  expect(others.every((r) => r.status === 200)).toBe(true)
  const again = await t.req('POST', '/v1/call/test.echo', { token: a.token, body: { x: 1 }, headers })
  expect(again.status).toBe(200)
  expect(again.body).toEqual(first.body)
  expect((await t.req('GET', '/v1/balance', { token: a.token })).body.balance).toBe(500 - 6 * first.body.charged)
})

test('the same call twice in one batch is filed once, and a filed call never again', async () => {
  const a = await t.signup()
  const r = await t.req('POST', '/v1/call/test.echo', { token: a.token, body: {} })
  await Bun.sleep(20)
  // Filed a second after the call (the app's clock, which the activity's order reads, not the wall's).
  t.clock.advance(1000)
  const { runRecordCalls } = await import('../../src/lua/record-calls')
  const file = (callId: string) => {
    const rec = { call_id: callId, slug: 'test.echo', agent_id: null, charged: 5, refunded: false, outcome: 'ok', http_status: 200, latency_ms: 1, at: new Date(t.clock.now()).toISOString(), account_id: a.account_id }
    return { accountId: a.account_id, callId, agentId: null, recordJson: JSON.stringify(rec), charged: 5, organic: true, idempotency: null }
  }
  const fresh = file(`call_${t.prefix}_twice`)
  const replies = await runRecordCalls(t.s.ctx, [fresh, file(r.body.call_id), fresh], { recentCalls: 200, settledTtlS: 300 })
  expect(replies).toEqual([{ status: 'ok' }, { status: 'already_applied' }, { status: 'already_applied' }])
  const activity = (await t.req('GET', '/v1/activity', { token: a.token })).body.calls as { call_id: string }[]
  expect(activity.map((c) => c.call_id)).toEqual([fresh.callId, r.body.call_id])
})

test('on a single Redis one script files a turn\'s calls of every shard, each in its own shard', async () => {
  expect(filingGroup(t.s.ctx)('acc_03_x')).toBe(filingGroup(t.s.ctx)('acc_12_y'))
  const accounts = await Promise.all(Array.from({ length: 8 }, () => t.signup()))
  const shards = new Set(accounts.map((a) => t.s.ctx.keys.shardOf(a.account_id)))
  expect(shards.size).toBeGreaterThan(1)
  const filing = new CallFiling(t.s.ctx, { recentCalls: 200, settledTtlS: 300 })
  const file = (accountId: string, i: number) => {
    const callId = `call_${t.prefix}_shards${i}`
    const rec = { call_id: callId, slug: 'test.echo', agent_id: null, charged: 5, refunded: false, outcome: 'ok', http_status: 200, latency_ms: 1, at: new Date().toISOString(), account_id: accountId }
    return { accountId, callId, agentId: null, recordJson: JSON.stringify(rec), charged: 5, organic: true, idempotency: null }
  }
  const before = await Promise.all([...shards].map((s) => t.redis.hget(t.s.ctx.keys.stats(s), 'organic_calls_routed')))
  const seen = countFiling()
  const replies = await Promise.all(accounts.map((a, i) => filing.file(file(a.account_id, i))))
  seen.restore()
  expect(replies).toEqual(accounts.map(() => ({ status: 'ok' })))
  expect([seen.scripts, seen.calls]).toEqual([1, accounts.length])
  // Each call in its own shard: its account's list, its shard's outbox and counters.
  for (const [i, a] of accounts.entries()) {
    const activity = (await t.req('GET', '/v1/activity', { token: a.token })).body.calls as { call_id: string }[]
    expect(activity.map((c) => c.call_id)).toEqual([`call_${t.prefix}_shards${i}`])
    const outbox = (await t.redis.xrange(t.s.ctx.keys.outbox(t.s.ctx.keys.shardOf(a.account_id)), '-', '+')).flatMap(([id, f]) => parseOutboxEntry(id, f))
    expect(outbox.filter((e) => e.fields.id === `call_${t.prefix}_shards${i}:call`)).toHaveLength(1)
  }
  const after = await Promise.all([...shards].map((s) => t.redis.hget(t.s.ctx.keys.stats(s), 'organic_calls_routed')))
  const perShard = [...shards].map((s) => accounts.filter((a) => t.s.ctx.keys.shardOf(a.account_id) === s).length)
  expect(after.map((n, j) => Number(n) - Number(before[j] ?? 0))).toEqual(perShard)
  await drain(t.s.flusher)
  const rows = await t.s.db.db.select({ id: calls.callId }).from(calls).where(inArray(calls.callId, accounts.map((_, i) => `call_${t.prefix}_shards${i}`)))
  expect(rows).toHaveLength(accounts.length)
})
