/**
 * record-calls.lua files a batch of calls as one `filed_calls` outbox entry (issue 42; `packed_calls`,
 * without each line's account, before). The flusher must write it as one row of `calls` per call and
 * count its organic calls in the metrics, an entry of either kind; an entry with a line that does not
 * unpack, or a call Postgres refuses, is dead-lettered whole and listed with the ids of the calls it
 * holds.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { runRecordCalls, type RecordCallArgs } from '../../src/lua/record-calls'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'

const ADMIN = 'founder-secret-0123456789abcdef'
let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { ADMIN_TOKEN: ADMIN } })
  await t.s.flusher.ensureGroups()
})
afterAll(() => t.close())

const rand = () => Math.random().toString(36).slice(2, 10)
const o = { recentCalls: 200, settledTtlS: 300 }

function call(accountId: string, charged: number | null): RecordCallArgs {
  const callId = `call_pk${rand()}`
  const rec = { call_id: callId, slug: 'test.cheap', agent_id: null, charged: charged ?? 5, refunded: charged === null, outcome: charged === null ? 'provider_5xx' : 'ok', http_status: 200, latency_ms: 3, at: new Date().toISOString(), account_id: accountId }
  return { accountId, callId, agentId: null, charged: charged ?? 0, organic: charged !== null, recordJson: JSON.stringify(rec), idempotency: null }
}

const rows = async (ids: string[]) =>
  (await t.s.db.db.execute(sql`select call_id, charged, refunded from calls where call_id in ${sql.raw(`(${ids.map((i) => `'${i}'`).join(',')})`)} order by call_id`)) as unknown as { call_id: string; charged: number; refunded: number }[]
const organicMetric = async () => Number(/^pab_organic_calls_total (\d+)$/m.exec((await t.req('GET', '/metrics')).text)?.[1] ?? 0)
const deadLetters = async () => (await t.req('GET', '/admin/dead-letters', { token: ADMIN })).body.dead_letters as { id: string; kind: string; entry: Record<string, string>; source_id: string }[]

test('a filed_calls entry lands as one row of calls per call, its organic calls counted', async () => {
  const a = await t.signup()
  const batch = [call(a.account_id, 5), call(a.account_id, null), call(a.account_id, 7)]
  await flushAll(t)
  const before = await organicMetric()
  expect(await runRecordCalls(t.s.ctx, batch, o)).toEqual(batch.map(() => ({ status: 'ok' })))
  const raw = await t.redis.xrange(t.s.ctx.keys.outbox(t.s.ctx.keys.shardOf(a.account_id)), '-', '+')
  expect(raw.filter(([, f]) => f[1] === 'filed_calls')).toHaveLength(1)

  await flushAll(t)
  const ids = batch.map((c) => c.callId)
  expect(await rows(ids)).toEqual(
    batch.map((c) => ({ call_id: c.callId, charged: JSON.parse(c.recordJson).charged, refunded: Number(!c.organic) })).sort((x, y) => (x.call_id < y.call_id ? -1 : 1)),
  )
  expect(await organicMetric()).toBe(before + 2)
  expect((await t.s.flusher.lag()).entries).toBe(0)
})

// A line of each kind as record-calls.lua writes it: `filed_calls` leads with the call's in-flight member.
const LINE = {
  filed_calls: (c: RecordCallArgs, rec = c.recordJson) => `${c.accountId}|${c.callId}|${c.organic ? c.charged : ''}|${rec}`,
  packed_calls: (c: RecordCallArgs, rec = c.recordJson) => `${c.callId}|${c.organic ? c.charged : ''}|${rec}`,
}

test('a packed_calls entry, as the script wrote it before filed_calls, still lands', async () => {
  const a = await t.signup()
  const batch = [call(a.account_id, 4), call(a.account_id, null)]
  await flushAll(t)
  const before = await organicMetric()
  await t.redis.xadd(t.s.ctx.keys.outbox(t.s.ctx.keys.shardOf(a.account_id)), '*', 'kind', 'packed_calls', 'c', batch.map((c) => LINE.packed_calls(c)).join('\n'))
  await flushAll(t)
  expect(await rows(batch.map((c) => c.callId))).toEqual(
    batch.map((c) => ({ call_id: c.callId, charged: JSON.parse(c.recordJson).charged, refunded: Number(!c.organic) })).sort((x, y) => (x.call_id < y.call_id ? -1 : 1)),
  )
  expect(await organicMetric()).toBe(before + 1)
})

test.each(['filed_calls', 'packed_calls'] as const)('a %s entry with a line that does not unpack, or a call Postgres refuses, is dead-lettered whole', async (kind) => {
  const a = await t.signup()
  const shard = t.s.ctx.keys.shardOf(a.account_id)
  const good = call(a.account_id, 5)
  const line = LINE[kind]
  const torn = (await t.redis.xadd(t.s.ctx.keys.outbox(shard), '*', 'kind', kind, 'c', `${line(good)}\nno bars here`))!
  const [x, y] = [call(a.account_id, 3), call(a.account_id, null)]
  // A record that is not JSON (22P02): its line unpacks, Postgres refuses the row.
  const refused = (await t.redis.xadd(t.s.ctx.keys.outbox(shard), '*', 'kind', kind, 'c', `${line(x)}\n${line(y, '{"call_id": ')}`))!

  await flushAll(t)
  expect((await t.s.flusher.lag()).entries).toBe(0)
  expect(await rows([good.callId])).toEqual([])
  const dead = (await deadLetters()).filter((d) => d.source_id === torn || d.source_id === refused)
  expect(dead.map((d) => [d.source_id, d.kind, d.entry.ids])).toEqual([
    [torn, kind, undefined],
    [refused, kind, `${x.callId}:call,${y.callId}:call`],
  ])
  expect(dead[0]!.entry.c).toBe(`${line(good)}\nno bars here`)
})
