/**
 * record-calls.lua files a batch with one ZREM of the in-flight set and one LPUSH per recent-calls
 * list (issue 42's bench), where each call used to take its own. That must change nothing a reader
 * sees: over random batches — several calls of one account, refunded and recorded calls, the same
 * call twice, Idempotency-Keys stored and released, lists near their trim — one batch and the same
 * calls one script at a time give the same replies, the same newest `keep` calls of each list (in
 * the same order), the same in-flight set, counters, call records, idempotency records and outbox
 * entries, shard by shard, when the batch spans several shards (on a single Redis one script files a
 * turn's calls of every shard, issue 42); and the batch resent changes nothing. On a private redis-server.
 */
import { beforeAll, expect, test } from 'bun:test'
import fc from 'fast-check'
import Redis from 'ioredis'
import { runRecordCalls, type RecordCallArgs } from '../../src/lua/record-calls'
import type { RedisContext } from '../../src/redis/context'
import { parseOutboxEntry } from '../../src/write-behind/outbox'
import { privateScriptServer } from '../helpers/script-rig'

const rig = privateScriptServer()
let redis: Redis
beforeAll(() => {
  redis = rig.redis
})
const ctxOf = rig.ctxOf
// Three accounts of one shard, and two of two others: on a single Redis one script files a turn's
// calls of every shard, a group per shard (issue 42).
const ACCOUNTS = ['acc_07_filing_a', 'acc_07_filing_b', 'acc_07_filing_c', 'acc_03_filing_d', 'acc_12_filing_e']
const SHARDS = [7, 3, 12]
const KEEP = 3
const SLACK = 32

interface CallSpec {
  acct: number
  /** 'debited': kept its charge; 'refunded': refunded before its filing (the request's own or the sweeper's). */
  state: 'debited' | 'refunded'
  recorded: boolean
  charged: number
  idem: 'store' | 'release' | null
}
interface Case {
  /** Records already in each account's list (up to keep + slack: the next push may trim). */
  listed: number[]
  calls: CallSpec[]
  /** Positions of calls filed twice in the batch (a resent call). */
  again: number[]
}

const callSpec = fc.record({
  acct: fc.integer({ min: 0, max: ACCOUNTS.length - 1 }),
  state: fc.constantFrom<'debited' | 'refunded'>('debited', 'debited', 'refunded'),
  recorded: fc.boolean(),
  charged: fc.integer({ min: 0, max: 50 }),
  idem: fc.constantFrom<'store' | 'release' | null>(null, null, 'store', 'release'),
})
const caseArb: fc.Arbitrary<Case> = fc.record({
  listed: fc.array(fc.integer({ min: 0, max: KEEP + SLACK }), { minLength: ACCOUNTS.length, maxLength: ACCOUNTS.length }),
  calls: fc.array(callSpec, { minLength: 1, maxLength: 40 }),
  again: fc.array(fc.nat(), { maxLength: 4 }),
})

let run = 0
async function oneAtATime(ctx: RedisContext, calls: RecordCallArgs[], o: { recentCalls: number; settledTtlS: number }) {
  const replies = []
  for (const a of calls) replies.push(...(await runRecordCalls(ctx, [a], o)))
  return replies
}
/** The Redis a case leaves behind, filed as one batch or one call a script. */
async function file(c: Case, batched: boolean) {
  const prefix = `rcb${++run}${batched ? 'b' : 's'}`
  const ctx = ctxOf(prefix)
  const { keys } = ctx
  for (const [i, n] of c.listed.entries())
    for (let k = 0; k < n; k++) await redis.lpush(keys.recentCalls(ACCOUNTS[i]!), JSON.stringify({ call_id: `old_${i}_${k}` }))
  const args: RecordCallArgs[] = c.calls.map((s, i) => {
    const accountId = ACCOUNTS[s.acct]!
    const callId = `call_${i}`
    const refunded = s.state === 'refunded'
    const charged = refunded ? 0 : s.charged
    return {
      accountId, callId, agentId: null, charged, organic: !refunded,
      recordJson: JSON.stringify({ call_id: callId, account_id: accountId, refunded, charged }),
      idempotency: s.idem === 'store' ? { key: `k${i}`, mode: 'store', replay: JSON.stringify({ call_id: callId }) } : s.idem === 'release' ? { key: `k${i}`, mode: 'release' } : null,
    }
  })
  for (const [i, s] of c.calls.entries()) {
    const a = args[i]!
    await redis.hset(keys.call(a.accountId, a.callId), { price: s.charged, state: s.state, ...(s.recorded ? { recorded: '1' } : {}) })
    await redis.expire(keys.call(a.accountId, a.callId), 172_800)
    if (!s.recorded && s.state === 'debited') await redis.zadd(keys.inflight(keys.shardOf(a.accountId)), 1, `${a.accountId}|${a.callId}`)
    if (s.idem) await redis.hset(keys.idempotency(a.accountId, null, `k${i}`), { state: 'pending', call: a.callId })
  }
  const order = [...args]
  for (const p of c.again) order.splice((p % (order.length + 1)), 0, args[p % args.length]!)
  const o = { recentCalls: KEEP, settledTtlS: 3600 }
  const replies = batched ? await runRecordCalls(ctx, order, o) : await oneAtATime(ctx, order, o)
  const seen = await state()
  if (batched) {
    // The batch resent (a lost reply): every call already filed, nothing changes.
    expect(await runRecordCalls(ctx, order, o)).toEqual(order.map(() => ({ status: 'already_applied' })))
    expect(await state()).toEqual(seen)
  }
  return { replies, ...seen }

  async function state() {
  const lists = await Promise.all(ACCOUNTS.map((a) => redis.lrange(keys.recentCalls(a), 0, KEEP - 1)))
  const lengths = await Promise.all(ACCOUNTS.map((a) => redis.llen(keys.recentCalls(a))))
  const callsLeft = await Promise.all(args.map(async (a) => ({ h: await redis.hgetall(keys.call(a.accountId, a.callId)), ttl: await redis.ttl(keys.call(a.accountId, a.callId)) })))
  const idem = await Promise.all(c.calls.map((s, i) => (s.idem ? redis.hgetall(keys.idempotency(args[i]!.accountId, null, `k${i}`)) : null)))
  // Parsed: a batch writes one packed entry a shard where calls one a script write one each (outbox.ts reads both alike).
  const outbox = await Promise.all(SHARDS.map(async (s) => (await redis.xrange(keys.outbox(s), '-', '+')).flatMap(([id, fields]) => parseOutboxEntry(id, fields).map((e) => ({ kind: e.kind, fields: e.fields })))))
  return {
    lists, lengths,
    calls: callsLeft.map((x) => ({ ...x, ttl: x.ttl > 3600 ? 'debit' : x.ttl > 0 ? 'filed' : x.ttl })),
    inflight: await Promise.all(SHARDS.map((s) => redis.zrange(keys.inflight(s), 0, -1))),
    stats: await Promise.all(SHARDS.map((s) => redis.hgetall(keys.stats(s)))),
    idem, outbox,
  }
  }
}

test('one batch and one call a script file the same: replies, lists, in-flight set, counters, records, outbox', async () => {
  await fc.assert(
    fc.asyncProperty(caseArb, async (c) => {
      const batched = await file(c, true)
      const single = await file(c, false)
      const { lengths, ...seen } = batched
      const { lengths: singleLengths, ...seenSingle } = single
      expect(seen).toEqual(seenSingle)
      // The list holds its newest `keep` and at most TRIM_SLACK more, whichever way it was filed.
      for (const n of [...lengths, ...singleLengths]) expect(n).toBeLessThanOrEqual(KEEP + SLACK)
      // Every call filed once: its record pushed once, its in-flight member gone.
      expect(batched.inflight).toEqual(SHARDS.map(() => []))
      expect(batched.outbox.flat()).toHaveLength(c.calls.filter((s) => !s.recorded).length)
      // Each call in its own shard's outbox.
      for (const [i, s] of SHARDS.entries()) for (const e of batched.outbox[i]!) expect(Number(JSON.parse(e.fields.rec!).account_id.slice(4, 6))).toBe(s)
    }),
    { numRuns: 60 },
  )
}, 120_000)
