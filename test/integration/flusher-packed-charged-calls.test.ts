/**
 * settle.lua files a settle batch's calls as one `packed_charged_calls` outbox entry, one line a call
 * (lua/settle.lua's header). The flusher must write the same Postgres rows (ledger_entries and calls)
 * as the plain `charged_call` entries a lone settle still writes; a settle it does not file keeps its
 * place in the stream between the packed entries; and an entry Postgres refuses is dead-lettered
 * whole, listed with its calls' ids, and replayed whole once the cause is mended.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { inArray, sql } from 'drizzle-orm'
import { calls, ledgerEntries } from '../../src/db/schema'
import type { Principal } from '../../src/auth/principal'
import { parseOutboxEntry } from '../../src/write-behind/outbox'
import { windowsAt } from '../../src/windows'
import { startTestApp, type TestApp } from '../helpers/harness'
import { openModelCall } from '../helpers/metering'
import { assertLedger } from '../helpers/invariants'
import { asHashRecord, checkRedisInvariant, flushAll } from '../helpers/ledger'

const ADMIN = 'founder-secret-0123456789abcdef'
let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { ADMIN_TOKEN: ADMIN } })
  await t.s.flusher.ensureGroups()
})
afterAll(() => t.close())

const openMetered = (principal: Principal, model?: string) => openModelCall(t.s, principal, model)

const principalOf = async (token: string) => (await t.s.guard.tokens.resolve(token))!
const streamOf = (acct: string) => t.s.ctx.keys.outbox(t.s.ctx.keys.shardOf(acct))

/** The kinds of the raw stream entries holding any of `ids`, in stream order (a packed one with its line count). */
async function rawKinds(acct: string, ids: string[], after?: string) {
  const raw = await t.redis.xrange(streamOf(acct), after ? `(${after}` : '-', '+')
  return raw
    .filter(([, f]) => ids.some((id) => f.some((v) => v.includes(id))))
    .map(([sid, f]) => (f[1] === 'packed_charged_calls' ? `packed_charged_calls×${parseOutboxEntry(sid, f).filter((e) => e.kind === 'call').length}` : f[1]!))
}

// Models holding the packed form's separators ('|', '\n') and non-ASCII bytes: the settle field's byte length carries them.
const MODELS = ['gpt-test', 'm|ödd|é', 'two\nlines|and\n|bars', 'gpt-test', 'gpt-test']
const TOKENS = [
  { input: 7000, cached: 1000, output: 3330 },
  { input: 120, cached: 0, output: 77 },
  { input: 5, cached: 0, output: 0 },
  { input: 900, cached: 30, output: 410, cache_write: 250, cache_write_1h: 40 },
  { input: 0, cached: 0, output: 0 },
]

/** Rows with what differs between two accounts' twin calls (ids, dates, stream ids) left out. */
async function ledgerRowsOf(ids: string[]) {
  const rows = await t.s.db.db.select().from(ledgerEntries).where(inArray(ledgerEntries.callId, ids))
  return ids.map((id) => {
    const mine = rows.filter((r) => r.callId === id)
    return mine.map(({ id: _id, accountId: _a, callId: _c, at: _at, streamId: _s, ...rest }) => rest)
  })
}
async function callRowsOf(ids: string[]) {
  const rows = await t.s.db.db.select().from(calls).where(inArray(calls.callId, ids))
  return ids.map((id) => {
    const mine = rows.filter((r) => r.callId === id)
    return mine.map(({ callId: _c, accountId: _a, at: _at, latencyMs: _l, ...rest }) => rest)
  })
}

test('a settle batch files its calls as one packed entry, flushed to the same rows as the plain entries of lone settles', async () => {
  const [a, b] = [await t.signup(), await t.signup()]
  const [pa, pb] = [await principalOf(a.token), await principalOf(b.token)]
  const batched = [] as Awaited<ReturnType<typeof openMetered>>[]
  const alone = [] as Awaited<ReturnType<typeof openMetered>>[]
  for (const m of MODELS) batched.push(await openMetered(pa, m))
  for (const m of MODELS) alone.push(await openMetered(pb, m))

  // Account a: the calls settled together, one batch. Account b: the same, one at a time.
  const sa = await Promise.all(batched.map((c, i) => c.settle('ok', { usage: { tokens: TOKENS[i]!, source: 'provider' } })))
  const sb = []
  for (const [i, c] of alone.entries()) sb.push(await c.settle('ok', { usage: { tokens: TOKENS[i]!, source: 'provider' } }))
  expect(sa.map((s) => s.charged)).toEqual(sb.map((s) => s.charged))
  const idsA = batched.map((c) => c.callId)
  const idsB = alone.map((c) => c.callId)
  expect(await rawKinds(a.account_id, idsA)).toEqual([`packed_charged_calls×${MODELS.length}`])
  expect(await rawKinds(b.account_id, idsB)).toEqual(MODELS.map(() => 'charged_call'))
  await checkRedisInvariant(t, a.account_id)

  await flushAll(t)
  expect((await t.s.flusher.lag()).entries).toBe(0)
  const [ledgerA, ledgerB] = [await ledgerRowsOf(idsA), await ledgerRowsOf(idsB)]
  expect(ledgerA.map((r) => r.length)).toEqual(MODELS.map(() => 1))
  expect(ledgerA).toEqual(ledgerB)
  expect(ledgerA.map((r) => r[0]!.model)).toEqual(MODELS)
  expect(ledgerA[3]![0]).toMatchObject({ tokensCacheWrite: 250, tokensCacheWrite1h: 40 })
  const [callsA, callsB] = [await callRowsOf(idsA), await callRowsOf(idsB)]
  expect(callsA.map((r) => r.length)).toEqual(MODELS.map(() => 1))
  expect(callsA).toEqual(callsB)
  await assertLedger(t.s, [{ account: a.account_id, debits: idsA }, { account: b.account_id, debits: idsB }])
})

/** settle.lua run directly with one batch of owner calls, each filed (`file`) or not: the app never mixes them in one script. */
async function settleScript(acct: string, batch: { callId: string; file: boolean }[], tokens: { input: number; output: number }) {
  const { keys } = t.s.ctx
  const shard = keys.shardOf(acct)
  const day = windowsAt(Date.now()).day
  const k = [keys.outbox(shard), keys.inflight(shard), keys.stats(shard)]
  const argv: (string | number)[] = [200, 300, Date.now()]
  for (const c of batch) {
    // The owner's organic call of the provider's usage: its 4 keys and the shape '' (lua/settle.lua).
    k.push(keys.account(acct), keys.call(acct, c.callId), keys.spentToday(acct, day), keys.recentCalls(acct))
    const head = JSON.stringify({ call_id: c.callId, slug: 'proxy:openai/gpt-test', agent_id: null, refunded: false, outcome: 'ok', http_status: 200, latency_ms: 3, at: new Date().toISOString(), account_id: acct, model: 'gpt-test' }).slice(0, -1)
    argv.push(c.callId, acct, tokens.input, 0, tokens.output, c.file ? head : '', '')
  }
  return (await t.s.ctx.scripts.settle(k, argv)) as unknown as unknown[]
}

test('a settle the batch does not file, or one settled as before the hold, keeps its place between the packed entries', async () => {
  const a = await t.signup()
  const p = await principalOf(a.token)
  const { keys, redis } = t.s.ctx
  const opened = [] as Awaited<ReturnType<typeof openMetered>>[]
  for (let i = 0; i < 8; i++) opened.push(await openMetered(p))
  // The fifth as debit.lua left a metered call before the hold: no `hold` mark, its reservation a debit entry.
  const legacy = opened[4]!
  await asHashRecord(redis, keys.call(a.account_id, legacy.callId), ['hold'])
  await redis.hincrby(keys.account(a.account_id), 'held', -legacy.price)
  await redis.xadd(streamOf(a.account_id), '*', 'kind', 'debit', 'id', `${legacy.callId}:debit`, 'acct', a.account_id,
    'agent', '', 'amount', String(-legacy.price), 'bal', String(500 - 8 * legacy.price + legacy.price), 'call', legacy.callId, 'target', 'proxy:openai/gpt-test', 'at', String(Date.now()), 'model', 'gpt-test')
  const before = (await redis.xrevrange(streamOf(a.account_id), '+', '-', 'COUNT', 1))[0]![0]
  // The third is not filed (its debit an entry of its own); the fourth, alone between it and the
  // legacy call, keeps the plain entry.
  const replies = await settleScript(a.account_id, opened.map((c, i) => ({ callId: c.callId, file: i !== 2 })), { input: 300, output: 200 })
  expect(replies.map((r) => (r as number[])[0])).toEqual(opened.map(() => (replies[0] as number[])[0]))
  expect(await rawKinds(a.account_id, opened.map((c) => c.callId), before)).toEqual(['packed_charged_calls×2', 'debit', 'charged_call', 'settled_call', 'packed_charged_calls×3'])
  await checkRedisInvariant(t, a.account_id)
  await flushAll(t)
  expect((await t.s.flusher.lag()).entries).toBe(0)
  await assertLedger(t.s, [{ account: a.account_id, debits: opened.filter((c) => c !== legacy).map((c) => c.callId), refunded: [legacy.callId] }])
  expect((await t.s.db.db.select({ id: calls.callId }).from(calls).where(inArray(calls.callId, opened.map((c) => c.callId)))).length).toBe(7)
})

const deadLetters = async () => (await t.req('GET', '/admin/dead-letters', { token: ADMIN })).body.dead_letters as { id: string; kind: string; entry: Record<string, string>; source_id: string }[]

test('a packed_charged_calls entry with a line that does not unpack, or a row Postgres refuses, is dead-lettered whole; replayed once mended, it lands whole', async () => {
  const a = await t.signup()
  const p = await principalOf(a.token)
  const { keys, redis } = t.s.ctx
  const shard = keys.shardOf(a.account_id)
  const stream = keys.outbox(shard)
  const settleBatch = async (n: number) => {
    const cs = [] as Awaited<ReturnType<typeof openMetered>>[]
    for (let i = 0; i < n; i++) cs.push(await openMetered(p))
    await flushAll(t)
    await Promise.all(cs.map((c) => c.settle('ok', { usage: { tokens: { input: 1000, cached: 0, output: 500 }, source: 'provider' } })))
    const [sid, raw] = (await redis.xrange(stream, '-', '+')).find(([, f]) => f[1] === 'packed_charged_calls')!
    return { ids: cs.map((c) => c.callId), sid, c: raw[3]! }
  }

  // Torn: its second line cut inside the settle field. Nothing of it is filed, not even the first line.
  const torn = await settleBatch(2)
  const lines = torn.c.split('\n')
  const cut = `${lines[0]}\n${lines[1]!.slice(0, 40)}`
  await redis.xdel(stream, torn.sid)
  const tornId = (await redis.xadd(stream, '*', 'kind', 'packed_charged_calls', 'c', cut))!
  await flushAll(t)
  expect((await t.s.flusher.lag()).entries).toBe(0)
  expect(await t.s.db.db.select({ id: ledgerEntries.id }).from(ledgerEntries).where(inArray(ledgerEntries.callId, torn.ids))).toEqual([])
  expect(await t.s.db.db.select({ id: calls.callId }).from(calls).where(inArray(calls.callId, torn.ids))).toEqual([])

  // Refused: a call row Postgres turns down (a check the founder then drops), the entry as settle.lua wrote it.
  const refused = await settleBatch(3)
  await t.s.db.db.execute(sql.raw(`alter table calls add constraint packed_test_refuse check (call_id <> '${refused.ids[1]}')`))
  await flushAll(t)
  expect((await t.s.flusher.lag()).entries).toBe(0)
  expect(await t.s.db.db.select({ id: calls.callId }).from(calls).where(inArray(calls.callId, [refused.ids[1]!]))).toEqual([])

  const dead = (await deadLetters()).filter((d) => d.source_id === tornId || d.source_id === refused.sid)
  expect(dead.map((d) => [d.source_id, d.kind, d.entry.ids])).toEqual([
    [tornId, 'packed_charged_calls', undefined],
    [refused.sid, 'packed_charged_calls', refused.ids.map((id) => `${id}:call`).join(',')],
  ])
  expect(dead[0]!.entry.c).toBe(cut)
  expect(dead[1]!.entry.c).toBe(refused.c)

  // Mended and replayed: every row of the entry, each debit once.
  await t.s.db.db.execute(sql.raw('alter table calls drop constraint packed_test_refuse'))
  expect((await t.req('POST', `/admin/dead-letters/${dead[1]!.id}/replay`, { token: ADMIN })).status).toBe(200)
  const replayed = (await redis.xrange(stream, '-', '+')).filter(([, f]) => f[1] === 'packed_charged_calls')
  expect(replayed.length).toBe(1)
  expect(replayed[0]![1].slice(0, 4)).toEqual(['kind', 'packed_charged_calls', 'c', refused.c])
  await flushAll(t)
  expect((await t.s.flusher.lag()).entries).toBe(0)
  const ledgerRows = await t.s.db.db.select({ id: ledgerEntries.id, streamId: ledgerEntries.streamId }).from(ledgerEntries).where(inArray(ledgerEntries.callId, refused.ids))
  expect(ledgerRows.map((r) => r.id).sort()).toEqual(refused.ids.map((id) => `${id}:debit`).sort())
  expect(ledgerRows.map((r) => r.streamId)).toEqual(refused.ids.map(() => refused.sid))
  expect((await t.s.db.db.select({ id: calls.callId }).from(calls).where(inArray(calls.callId, refused.ids))).length).toBe(3)
  await t.req('DELETE', `/admin/dead-letters/${dead[0]!.id}`, { token: ADMIN })
})
