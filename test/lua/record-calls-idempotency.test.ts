/**
 * record-calls.lua takes a batch in which only some calls carry an Idempotency-Key (the common call
 * has none and sends less): each call's parts must still land on that call. Pinned by what a reader
 * sees, not by comparing two layouts: the replies, the answers stored, the keys released, the
 * recent lists, the in-flight set, the counters and the outbox entries of one mixed batch.
 */
import { expect, test } from 'bun:test'
import { runRecordCalls, type RecordCallArgs } from '../../src/lua/record-calls'
import { parseOutboxEntry } from '../../src/write-behind/outbox'
import { scriptRig } from '../helpers/script-rig'

const { redis, keys, ctx } = scriptRig('rcidem')
// Two accounts of one shard (one hash slot: one script).
const A = 'acc_05_rcidem_a'
const B = 'acc_05_rcidem_b'
const shard = keys.shardOf(A)
const o = { recentCalls: 10, settledTtlS: 300 }

const rec = (acct: string, callId: string, charged: number) => JSON.stringify({ call_id: callId, account_id: acct, charged })
function call(acct: string, callId: string, charged: number | null, idempotency: RecordCallArgs['idempotency'], agentId: string | null = null): RecordCallArgs {
  // charged null: refunded (keeps nothing, not organic).
  return { accountId: acct, callId, agentId, charged: charged ?? 0, organic: charged !== null, recordJson: rec(acct, callId, charged ?? 0), idempotency }
}

test('a batch mixing calls with and without an Idempotency-Key files each call with its own key, answer and record', async () => {
  const calls: RecordCallArgs[] = [
    call(A, 'c1', 5, null),
    call(A, 'c2', 3, { key: 'k2', mode: 'store', replay: '{"answer":"c2"}' }),
    call(B, 'c3', null, null),
    call(A, 'c4', null, { key: 'k4', mode: 'release' }),
    call(B, 'c5', 7, { key: 'k5', mode: 'store', replay: '{"answer":"c5"}' }, 'agt_5'),
    call(B, 'c6', 2, null),
    call(B, 'c7', null, { key: 'k7', mode: 'release' }, 'agt_7'),
  ]
  for (const c of calls) {
    await redis.hset(keys.call(c.accountId, c.callId), { price: 9, state: 'debited' })
    await redis.zadd(keys.inflight(shard), 1, `${c.accountId}|${c.callId}`)
    if (c.idempotency) await redis.hset(keys.idempotency(c.accountId, c.agentId, c.idempotency.key), { state: 'pending', call: c.callId })
  }
  // A call still in flight, not in the batch: its member stays.
  await redis.zadd(keys.inflight(shard), 1, `${A}|c_other`)

  // c2 again at the end (a resent call): filed once, its answer stored once.
  const replies = await runRecordCalls(ctx, [...calls, calls[1]!], o)
  expect(replies).toEqual([...calls.map(() => ({ status: 'ok' as const })), { status: 'already_applied' as const }])

  const idem = async (acct: string, agent: string | null, key: string) => redis.hgetall(keys.idempotency(acct, agent, key))
  expect(await idem(A, null, 'k2')).toEqual({ state: 'done', call: 'c2', response: '{"answer":"c2"}' })
  expect(await idem(B, 'agt_5', 'k5')).toEqual({ state: 'done', call: 'c5', response: '{"answer":"c5"}' })
  expect(await redis.ttl(keys.idempotency(A, null, 'k2'))).toBeGreaterThan(0)
  expect(await redis.exists(keys.idempotency(A, null, 'k4'), keys.idempotency(B, 'agt_7', 'k7'))).toBe(0)

  expect(await redis.lrange(keys.recentCalls(A), 0, -1)).toEqual([rec(A, 'c4', 0), rec(A, 'c2', 3), rec(A, 'c1', 5)])
  expect(await redis.lrange(keys.recentCalls(B), 0, -1)).toEqual([rec(B, 'c7', 0), rec(B, 'c6', 2), rec(B, 'c5', 7), rec(B, 'c3', 0)])
  expect(await redis.zrange(keys.inflight(shard), 0, -1)).toEqual([`${A}|c_other`])
  for (const c of calls) expect(await redis.hmget(keys.call(c.accountId, c.callId), 'state', 'recorded')).toEqual(['filed', '1'])
  expect(await redis.hgetall(keys.stats(shard))).toEqual({ organic_calls_routed: '4', credits_honored: '17' })

  // One stream entry for the batch (issue 42), read back as the plain entries of its calls, in order.
  const raw = await redis.xrange(keys.outbox(shard), '-', '+')
  expect(raw.map(([, f]) => f[1])).toEqual(['filed_calls'])
  const organic = (id: string, charged: number, r: string) => ({ kind: 'call', id: `${id}:call`, organic: '1', charged: String(charged), rec: r })
  const refunded = (id: string, r: string) => ({ kind: 'call', id: `${id}:call`, organic: '0', rec: r })
  const parsed = raw.flatMap(([id, f]) => parseOutboxEntry(id, f))
  expect(new Set(parsed.map((e) => `${e.streamId} ${e.kind}`))).toEqual(new Set([`${raw[0]![0]} call`]))
  expect(parsed.map((e) => e.fields)).toEqual([
    organic('c1', 5, rec(A, 'c1', 5)),
    organic('c2', 3, rec(A, 'c2', 3)),
    refunded('c3', rec(B, 'c3', 0)),
    refunded('c4', rec(A, 'c4', 0)),
    organic('c5', 7, rec(B, 'c5', 7)),
    organic('c6', 2, rec(B, 'c6', 2)),
    refunded('c7', rec(B, 'c7', 0)),
  ])
})

test('a batch whose Idempotency-Key part does not fit its calls is refused before any write', async () => {
  const C = 'acc_05_rcidem_c'
  const shared = [keys.stats(shard), keys.outbox(shard), keys.inflight(shard)]
  const own = (id: string) => ({ k: [keys.recentCalls(C), keys.call(C, id)], a: [rec(C, id, 1), `${C}|${id}`, '1'] })
  const [x, y] = [own('x1'), own('x2')]
  const idem = keys.idempotency(C, null, 'kx')
  await redis.hset(keys.call(C, 'x1'), { state: 'debited' })
  const malformed = [
    // a call index past the batch's two calls
    { k: [idem], a: ['3', '{}'] },
    // the answer to store missing
    { k: [idem], a: ['2'] },
    // a key record without its call's index
    { k: [idem], a: [] },
    // the same call named twice
    { k: [idem, idem], a: ['-1', '-1'] },
    // not a call index
    { k: [idem], a: ['one', '{}'] },
  ]
  for (const m of malformed)
    await expect(ctx.scripts.recordCalls([...shared, ...x.k, ...y.k, ...m.k], [10, 300, 1, 2, ...x.a, ...y.a, ...m.a])).rejects.toThrow('record-calls:')
  expect(await redis.hgetall(keys.call(C, 'x1'))).toEqual({ state: 'debited' })
  expect(await redis.exists(keys.recentCalls(C))).toBe(0)
})
